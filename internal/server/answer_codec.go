package server

import (
	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"

	pb "github.com/pith-dev/pith/internal/gen/pith/session/v1"
)

// How the daemon encodes its answers. Every answer of a call that holds
// a slot of server.maxCallsInFlight comes wrapped in its answerHold
// (answer_hold.go): it is encoded into buffers the hold counts, so that
// the slot is given back once gRPC has let go of them.
//
// One answer grows with the session: GetContext's. Encoded like any
// message, it was copied whole into a buffer of its size (a 30 MB
// session, 30 MB per call) held until its last byte was sent. The
// messages are read-only bytes the engine shares (they are never written
// to once read or appended), so a large answer refers to them instead of
// copying them: gRPC writes a message from a list of buffers, reading
// each as it fills its frames.

// answerCodec is gRPC's codec for "proto" (whatever is registered:
// internal/wire's when linked), with held answers encoded into counted
// buffers and GetContext's large answer referring to its messages. The
// bytes on the wire are the same.
type answerCodec struct {
	encoding.CodecV2
}

// answerCodecOption makes the daemon's gRPC server use answerCodec.
func answerCodecOption() grpc.ServerOption {
	return grpc.ForceServerCodecV2(answerCodec{encoding.GetCodecV2("proto")})
}

func (c answerCodec) Marshal(v any) (mem.BufferSlice, error) {
	h, ok := v.(*answerHold)
	if !ok {
		// Not a call's answer (a stream's message, the health
		// check's answer): encoded as the registered codec does; a
		// large GetContext answer still refers to its messages.
		if r, ok := v.(*pb.GetContextResponse); ok && r.SizeVT() >= referAbove {
			h = &answerHold{msg: r}
			h.left.Store(1)
		} else {
			return c.CodecV2.Marshal(v)
		}
	}
	data, err := c.marshalHeld(h)
	// The encoding is done: from now on only the buffers count (and,
	// on a stream, its handler's count and its next messages').
	h.msg = nil
	h.unref()
	return data, err
}

// marshalHeld encodes h's answer into buffers h counts.
func (c answerCodec) marshalHeld(h *answerHold) (mem.BufferSlice, error) {
	switch m := h.msg.(type) {
	case *pb.GetContextResponse:
		if m.SizeVT() >= referAbove {
			return marshalContext(m, h)
		}
		return marshalVT(m, h)
	case vtMessage:
		return marshalVT(m, h)
	}
	// Not generated with vtprotobuf (none of the SessionService's
	// messages): encoded by the registered codec, then copied.
	data, err := c.CodecV2.Marshal(h.msg)
	if err != nil {
		return nil, err
	}
	defer data.Free()
	b := h.pooled(data.Len())
	data.CopyTo(*b)
	return mem.BufferSlice{h.buffer(b)}, nil
}

// vtMessage is a message generated with vtprotobuf's size and marshal.
type vtMessage interface {
	SizeVT() int
	MarshalToSizedBufferVT([]byte) (int, error)
}

// marshalVT encodes m into one buffer of h's.
func marshalVT(m vtMessage, h *answerHold) (mem.BufferSlice, error) {
	size := m.SizeVT()
	if h.carves(size) {
		dst, buf := h.carve(size)
		if _, err := m.MarshalToSizedBufferVT(dst); err != nil {
			buf.Free()
			return nil, err
		}
		return mem.BufferSlice{buf}, nil
	}
	b := h.pooled(size)
	if _, err := m.MarshalToSizedBufferVT(*b); err != nil {
		mem.DefaultBufferPool().Put(b)
		return nil, err
	}
	return mem.BufferSlice{h.buffer(b)}, nil
}

// referAbove is the size of an answer from which it refers to its
// messages: a smaller one is copied whole into one buffer, which costs
// less than the two buffers of the list each message referred to takes.
const referAbove = 256 << 10

// copyBelow is the size under which a message is copied next to its
// field header rather than referred to: a buffer of the list costs
// about 40 bytes of its own.
const copyBelow = 256

// refers reports whether marshalContext refers to m rather than copying
// it.
func refers(m []byte) bool { return len(m) >= copyBelow && referable(m) }

// marshalContext encodes r as proto.Marshal does — the messages (field
// 1) first, then the other fields in order — referring to each message
// refers accepts rather than copying it; the field headers, the messages
// copied and the other fields share one pooled buffer, of which the
// answer holds views. r is the handler's own answer: its Messages are set aside while
// the other fields are encoded, and put back.
func marshalContext(r *pb.GetContextResponse, h *answerHold) (mem.BufferSlice, error) {
	msgs := r.Messages
	r.Messages = nil
	restSize := r.SizeVT()
	n, large := restSize, 0
	for _, m := range msgs {
		n += 1 + protowire.SizeVarint(uint64(len(m)))
		if refers(m) {
			large++
		} else {
			n += len(m)
		}
	}
	b := h.pooled(n)
	_, err := r.MarshalToSizedBufferVT((*b)[n-restSize:])
	r.Messages = msgs
	if err != nil {
		mem.DefaultBufferPool().Put(b)
		return nil, err
	}
	// The shared buffer is filled in place (appending within its
	// length never moves it), and the answer takes a view of each run
	// between two messages referred to.
	local := h.buffer(b)
	defer local.Free()
	out := make(mem.BufferSlice, 0, 2*large+1)
	w, start := (*b)[:0], 0
	for i, m := range msgs {
		w = protowire.AppendTag(w, 1, protowire.BytesType)
		w = protowire.AppendVarint(w, uint64(len(m)))
		if !refers(m) {
			w = append(w, m...)
			continue
		}
		out = append(out, local.Slice(start, len(w)), h.refer(&msgs[i]))
		start = len(w)
	}
	if start < n {
		out = append(out, local.Slice(start, n))
	}
	return out, nil
}
