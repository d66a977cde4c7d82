package server

import (
	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"

	pb "github.com/pith-dev/pith/internal/gen/pith/session/v1"
)

// How the daemon encodes the one answer whose size grows with the
// session: GetContext's. Encoded like any message, it was copied whole
// into a buffer of its size (a 30 MB session, 30 MB per call), held
// until its last byte was sent — and a call's slot of
// server.maxCallsInFlight is given back when its handler returns, before
// that: a client asking again and again without reading its answers made
// the daemon hold one copy of the context per call, without bound. The
// messages are read-only bytes the engine shares (they are never written
// to once read or appended), so the answer refers to them instead of
// copying them: gRPC writes a message from a list of buffers, reading
// each as it fills its frames.

// answerCodec is gRPC's codec for "proto" (whatever is registered:
// internal/wire's when linked), with GetContext's answer encoded
// without copying its messages. The bytes on the wire are the same.
type answerCodec struct {
	encoding.CodecV2
}

// answerCodecOption makes the daemon's gRPC server use answerCodec.
func answerCodecOption() grpc.ServerOption {
	return grpc.ForceServerCodecV2(answerCodec{encoding.GetCodecV2("proto")})
}

func (c answerCodec) Marshal(v any) (mem.BufferSlice, error) {
	if r, ok := v.(*pb.GetContextResponse); ok && r.SizeVT() >= referAbove {
		return marshalContext(r)
	}
	return c.CodecV2.Marshal(v)
}

// referAbove is the size of an answer from which it refers to its
// messages: a smaller one is copied whole, which costs less than the
// two small allocations each message referred to takes (a session of
// 100 short messages: 286 allocations per call copied, 507 referred).
const referAbove = 256 << 10

// copyBelow is the size under which a message is copied next to its
// field header rather than referred to: a buffer of the list costs
// about 40 bytes of its own.
const copyBelow = 256

// marshalContext encodes r as proto.Marshal does — the messages (field
// 1) first, then the other fields in order — with each message of
// copyBelow bytes or more referred to, not copied. r is the handler's
// own answer: its Messages are set aside while the other fields are
// encoded, and put back.
func marshalContext(r *pb.GetContextResponse) (mem.BufferSlice, error) {
	msgs := r.Messages
	r.Messages = nil
	rest := make([]byte, r.SizeVT())
	_, err := r.MarshalToSizedBufferVT(rest)
	r.Messages = msgs
	if err != nil {
		return nil, err
	}
	// Field headers and small messages share one buffer, sized first so
	// that appending never moves what earlier buffers refer to.
	n, large := 0, 0
	for _, m := range msgs {
		n += 1 + protowire.SizeVarint(uint64(len(m)))
		if len(m) < copyBelow {
			n += len(m)
		} else {
			large++
		}
	}
	local := make([]byte, 0, n)
	out := make(mem.BufferSlice, 0, 2*large+2)
	start := 0
	for _, m := range msgs {
		local = protowire.AppendTag(local, 1, protowire.BytesType)
		local = protowire.AppendVarint(local, uint64(len(m)))
		if len(m) < copyBelow {
			local = append(local, m...)
			continue
		}
		out = append(out, mem.SliceBuffer(local[start:]), mem.SliceBuffer(m))
		start = len(local)
	}
	if start < len(local) {
		out = append(out, mem.SliceBuffer(local[start:]))
	}
	if len(rest) > 0 {
		out = append(out, mem.SliceBuffer(rest))
	}
	return out, nil
}
