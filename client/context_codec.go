package client

import (
	"errors"

	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"

	pb "github.com/pith-dev/pith/internal/gen/pith/session/v1"
)

// How the client decodes the one answer whose size grows with the
// session: GetContext's. gRPC hands a codec the message as the list of
// buffers its frames arrived in (16 KB each). The proto codec first copies
// them into one buffer of the whole message, then decoding copies every
// message out of that buffer again: for a 30 MB context, two 30 MB copies
// and 90 MB held at the peak. contextCodec copies each message once,
// straight from the frames, and decodes only the few other fields the
// usual way; the result is the same message.

// contextCodec is gRPC's codec for "proto" (whatever is registered when
// the client dials), with GetContext's answer decoded from the frames.
type contextCodec struct {
	encoding.CodecV2
}

// contextCodecOption makes a connection's calls use contextCodec.
func contextCodecOption() grpc.DialOption {
	return grpc.WithDefaultCallOptions(grpc.ForceCodecV2(contextCodec{encoding.GetCodecV2("proto")}))
}

// decodeFramesFrom is the answer size from which the messages are copied
// from the frames: below it the answer fits in a few frames, and the one
// copy of the usual path costs less than the walk.
const decodeFramesFrom = 64 << 10

func (c contextCodec) Unmarshal(data mem.BufferSlice, v any) error {
	if r, ok := v.(*pb.GetContextResponse); ok && len(data) > 1 && data.Len() >= decodeFramesFrom {
		err := c.unmarshalContext(data, r)
		if !errors.Is(err, errUnusual) {
			return err
		}
		// Nothing of data was consumed: the usual path decodes it, and
		// reports what is wrong with it in its own words.
	}
	return c.CodecV2.Unmarshal(data, v)
}

// errUnusual: the answer has a field the walk does not handle (a group,
// an invalid tag or length); the usual decoder takes it.
var errUnusual = errors.New("unusual encoding")

// unmarshalContext decodes data into r: each message (field 1) is copied
// once from the frames; the other fields are gathered, still encoded,
// into one small buffer that the wrapped codec decodes (so its checks,
// valid UTF-8 in strings included, still apply), and the messages are put
// in afterwards — a message decoded from the same bytes whole is equal,
// since field 1 is only ever appended to, in order.
func (c contextCodec) unmarshalContext(data mem.BufferSlice, r *pb.GetContextResponse) error {
	rd := frameReader{bufs: data, size: data.Len()}
	var msgs [][]byte
	var rest []byte
	for !rd.done() {
		// The other fields keep their bytes exactly as they came (an
		// unknown field is compared by its bytes): tags and varints are
		// copied as read, not encoded again.
		mark := len(rest)
		tag, ok := rd.varint(&rest)
		if !ok {
			return errUnusual
		}
		num, typ := protowire.DecodeTag(tag)
		if num < protowire.MinValidNumber || num > protowire.MaxValidNumber {
			return errUnusual
		}
		switch typ {
		case protowire.VarintType:
			if _, ok := rd.varint(&rest); !ok {
				return errUnusual
			}
		case protowire.Fixed32Type, protowire.Fixed64Type:
			n := 4
			if typ == protowire.Fixed64Type {
				n = 8
			}
			if rest, ok = rd.appendNext(rest, n); !ok {
				return errUnusual
			}
		case protowire.BytesType:
			n, ok := rd.varint(&rest)
			if !ok || n > uint64(rd.remaining()) {
				return errUnusual
			}
			if num == 1 {
				rest = rest[:mark] // a message: not kept with the rest
				m, _ := rd.appendNext(make([]byte, 0, n), int(n))
				msgs = append(msgs, m)
				continue
			}
			rest, _ = rd.appendNext(rest, int(n))
		default:
			return errUnusual
		}
	}
	if err := c.CodecV2.Unmarshal(mem.BufferSlice{mem.SliceBuffer(rest)}, r); err != nil {
		return err
	}
	r.Messages = msgs
	return nil
}

// frameReader reads a list of buffers as one stream of bytes, without
// joining them.
type frameReader struct {
	bufs mem.BufferSlice
	size int // of all of them
	i    int // the buffer being read
	off  int // in it
	read int // bytes read in all
}

func (f *frameReader) done() bool { return f.remaining() == 0 }

func (f *frameReader) remaining() int { return f.size - f.read }

// byte reads one byte; ok is false at the end.
func (f *frameReader) byte() (b byte, ok bool) {
	for f.i < len(f.bufs) {
		d := f.bufs[f.i].ReadOnlyData()
		if f.off < len(d) {
			b = d[f.off]
			f.off++
			f.read++
			return b, true
		}
		f.i, f.off = f.i+1, 0
	}
	return 0, false
}

// varint reads a base-128 varint as protowire.ConsumeVarint does (at
// most 10 bytes, the tenth at most 1) and appends its bytes to *raw.
func (f *frameReader) varint(raw *[]byte) (uint64, bool) {
	var v uint64
	for i := 0; i < 10; i++ {
		b, ok := f.byte()
		if !ok {
			return 0, false
		}
		*raw = append(*raw, b)
		if i == 9 && b > 1 {
			return 0, false
		}
		v |= uint64(b&0x7f) << (7 * i)
		if b < 0x80 {
			return v, true
		}
	}
	return 0, false
}

// appendNext appends the next n bytes to dst; ok is false when fewer
// are left.
func (f *frameReader) appendNext(dst []byte, n int) ([]byte, bool) {
	if n > f.remaining() {
		return dst, false
	}
	for n > 0 {
		d := f.bufs[f.i].ReadOnlyData()[f.off:]
		if len(d) == 0 {
			f.i, f.off = f.i+1, 0
			continue
		}
		k := min(n, len(d))
		dst = append(dst, d[:k]...)
		f.off += k
		f.read += k
		n -= k
	}
	return dst, true
}
