package server

import (
	"bytes"
	"strings"
	"testing"

	pb "github.com/pith-dev/pith/internal/gen/pith/session/v1"
	"google.golang.org/grpc/encoding"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// TestAnswerCodecMatchesProto: GetContext's answer, encoded referring to
// its messages, is byte for byte what proto.Marshal makes of it — with
// every field set (found by reflection, so a field added to the message
// later is covered), messages small and large and empty — and the
// answer's messages are left as they were.
func TestAnswerCodecMatchesProto(t *testing.T) {
	r := &pb.GetContextResponse{}
	fields := r.ProtoReflect().Descriptor().Fields()
	for i := range fields.Len() {
		f := fields.Get(i)
		if f.Name() == "messages" {
			continue
		}
		var v protoreflect.Value
		switch f.Kind() {
		case protoreflect.StringKind:
			v = protoreflect.ValueOfString("value of " + string(f.Name()))
		case protoreflect.BoolKind:
			v = protoreflect.ValueOfBool(true)
		case protoreflect.Int64Kind:
			v = protoreflect.ValueOfInt64(1 << 40)
		default:
			t.Fatalf("field %s of kind %s: teach this test to set it", f.Name(), f.Kind())
		}
		if f.IsList() {
			t.Fatalf("repeated field %s: teach this test to set it", f.Name())
		}
		r.ProtoReflect().Set(f, v)
	}
	// The messages are slices of one buffer, as a session's are of its
	// file's bytes; the one of 300 bytes that ends it has no room past
	// it (its capacity under gRPC's pooling threshold), so it is copied.
	sizes := []int{0, 1, copyBelow - 1, copyBelow, 300, referAbove, 5, copyBelow + 1, 0, 300}
	file := []byte(strings.Repeat("x", referAbove+2000))
	at := 0
	for _, n := range sizes {
		r.Messages = append(r.Messages, file[at:at+n])
		at += n
	}
	last := len(r.Messages) - 1
	r.Messages[last] = r.Messages[last][:300:300]
	kept := append([][]byte(nil), r.Messages...)
	want, err := proto.MarshalOptions{Deterministic: true}.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	data, err := answerCodec{encoding.GetCodecV2("proto")}.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	got := data.Materialize()
	data.Free()
	if !bytes.Equal(got, want) {
		t.Fatalf("encoded %d bytes, proto.Marshal %d: not the same", len(got), len(want))
	}
	if len(r.Messages) != len(kept) {
		t.Fatal("the answer lost its messages")
	}
	for i := range kept {
		if !bytes.Equal(r.Messages[i], kept[i]) {
			t.Fatalf("message %d changed", i)
		}
	}
	var back pb.GetContextResponse
	if err := proto.Unmarshal(got, &back); err != nil || !proto.Equal(&back, r) {
		t.Fatalf("decoded back: %v", err)
	}
	// Referred to: the messages of copyBelow bytes or more but the
	// last, each with a buffer of the field headers and small messages
	// before it, and the fields after them.
	if refer := 4; len(data) != 2*refer+1 {
		t.Fatalf("an answer of %d bytes in %d buffers, want %d: it copied or referred to the wrong messages", len(got), len(data), 2*refer+1)
	}
	// A small answer, or one without messages, goes the ordinary way.
	for _, small := range []*pb.GetContextResponse{{LeafId: "x"}, {Messages: [][]byte{[]byte(strings.Repeat("y", 1000))}, LeafId: "x"}} {
		data, err = answerCodec{encoding.GetCodecV2("proto")}.Marshal(small)
		if err != nil {
			t.Fatal(err)
		}
		if want, _ := proto.Marshal(small); !bytes.Equal(data.Materialize(), want) {
			t.Fatal("a small answer is not encoded as proto.Marshal does")
		}
		data.Free()
	}
}
