package client

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"google.golang.org/grpc/encoding"
	_ "google.golang.org/grpc/encoding/proto" // the codec contextCodec wraps
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	pb "github.com/pith-dev/pith/internal/gen/pith/session/v1"
)

func testCodec() contextCodec { return contextCodec{encoding.GetCodecV2("proto")} }

// frames cuts b into buffers of size n (the last one shorter), as gRPC
// hands a received message to its codec.
func frames(b []byte, n int) mem.BufferSlice {
	var out mem.BufferSlice
	for len(b) > 0 {
		k := min(n, len(b))
		out = append(out, mem.SliceBuffer(b[:k]))
		b = b[k:]
	}
	return out
}

func bigAnswer() *pb.GetContextResponse {
	r := &pb.GetContextResponse{
		ContextTokens: 123456, Provider: "anthropic", ModelId: "claude-x", ThinkingLevel: "high",
		LeafId: "abcd1234", AutoCompactionDisabled: true,
	}
	for i := range 300 {
		// Sizes around the frame size, and empty ones, so that
		// messages, their length prefixes and tags all straddle frames.
		m := bytes.Repeat([]byte{byte('a' + i%26)}, (i*997)%40000)
		r.Messages = append(r.Messages, fmt.Appendf(nil, `{"i":%d,"t":"%s"}`, i, m))
		if i%50 == 0 {
			r.Messages = append(r.Messages, []byte{})
		}
	}
	return r
}

// The answer decoded from its frames equals the one protobuf-go decodes
// from the joined bytes, wherever the frames are cut.
func TestContextCodecMatchesProto(t *testing.T) {
	want := bigAnswer()
	wire, err := proto.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	// Unknown fields of every wire type the walk handles are kept too.
	wire = protowire.AppendTag(wire, 99, protowire.BytesType)
	wire = protowire.AppendBytes(wire, []byte("future field"))
	wire = protowire.AppendTag(wire, 100, protowire.Fixed64Type)
	wire = protowire.AppendFixed64(wire, 7)
	wire = protowire.AppendTag(wire, 101, protowire.Fixed32Type)
	wire = protowire.AppendFixed32(wire, 9)
	wire = protowire.AppendTag(wire, 102, protowire.VarintType)
	wire = protowire.AppendVarint(wire, 1<<40)
	wantAll := &pb.GetContextResponse{}
	if err := proto.Unmarshal(wire, wantAll); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{1, 3, 7, 1000, 16 << 10, 16<<10 + 1, len(wire) - 1} {
		got := &pb.GetContextResponse{}
		if err := testCodec().Unmarshal(frames(wire, n), got); err != nil {
			t.Fatalf("frames of %d: %v", n, err)
		}
		if !proto.Equal(got, wantAll) {
			t.Fatalf("frames of %d: decoded answer differs", n)
		}
	}
}

// An answer with a string that is not valid UTF-8 is refused as the
// usual decoder refuses it: the other fields still go through it.
func TestContextCodecKeepsChecks(t *testing.T) {
	r := bigAnswer()
	r.LeafId = ""
	wire, err := proto.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	wire = protowire.AppendTag(wire, 6, protowire.BytesType)
	wire = protowire.AppendBytes(wire, []byte{0xff, 0xfe})
	err = testCodec().Unmarshal(frames(wire, 16<<10), &pb.GetContextResponse{})
	if err == nil || proto.Unmarshal(wire, &pb.GetContextResponse{}) == nil {
		t.Fatalf("invalid UTF-8 accepted: %v", err)
	}
}

// A truncated answer is refused wherever protobuf-go refuses it: never a
// short list of messages.
func TestContextCodecTruncated(t *testing.T) {
	wire, err := proto.Marshal(bigAnswer())
	if err != nil {
		t.Fatal(err)
	}
	refused := 0
	for cut := 1; cut < len(wire); cut += 1 + cut/3 {
		part := wire[:len(wire)-cut]
		err := testCodec().Unmarshal(frames(part, 16<<10), &pb.GetContextResponse{})
		if wantErr := proto.Unmarshal(part, &pb.GetContextResponse{}); (err == nil) != (wantErr == nil) {
			t.Fatalf("answer cut by %d bytes: %v, protobuf-go: %v", cut, err, wantErr)
		}
		if err != nil {
			refused++
		}
	}
	if refused == 0 {
		t.Fatal("no cut was refused")
	}
}

// FuzzContextCodec: for any bytes and any frame size, decoding from the
// frames agrees with protobuf-go on the joined bytes — both fail, or both
// give equal messages.
func FuzzContextCodec(f *testing.F) {
	wire, _ := proto.Marshal(bigAnswer())
	f.Add(wire[:2000], 7)
	f.Add([]byte{0x0a, 0x02, 'h', 'i', 0x10, 0x05, 0x1a, 0x01, 'p'}, 3)
	f.Add([]byte{0x08, 0x01}, 1)             // field 1 as a varint
	f.Add([]byte{0x0b, 0x0c}, 1)             // a group
	f.Add([]byte{0x0a, 0xff, 0xff, 0x03}, 2) // a length past the end
	f.Fuzz(func(t *testing.T, data []byte, n int) {
		if n <= 0 || n > 1<<16 {
			return
		}
		want := &pb.GetContextResponse{}
		wantErr := proto.Unmarshal(data, want)
		got := &pb.GetContextResponse{}
		err := testCodec().unmarshalContext(frames(data, n), got)
		if errors.Is(err, errUnusual) {
			return // the usual decoder takes it: the same by construction
		}
		if (err == nil) != (wantErr == nil) {
			t.Fatalf("frames: %v, protobuf-go: %v", err, wantErr)
		}
		if err == nil && !proto.Equal(got, want) {
			t.Fatalf("decoded answers differ")
		}
	})
}
