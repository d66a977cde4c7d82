package wire_test

import (
	"bytes"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	pb "github.com/pith-dev/pith/internal/gen/pith/hooks/v1"
	"github.com/pith-dev/pith/internal/wire"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// codecs are the two ways a process decodes: the registered codec
// (protobuf-go's decoding) and the plugin server's (the generated code's).
func codecs() map[string]encoding.CodecV2 {
	return map[string]encoding.CodecV2{"registered": encoding.GetCodecV2("proto"), "plugin-server": wire.TrustingCodec}
}

// TestCodecMatchesGolden: the generated code puts on the wire exactly the
// bytes protobuf-go does (the golden files), and both ways of decoding read
// them back to the same message.
func TestCodecMatchesGolden(t *testing.T) {
	for name, m := range goldenCases() {
		want := readGolden(t, name)
		for cname, c := range codecs() {
			got, err := c.Marshal(m)
			if err != nil {
				t.Fatalf("%s %s: %v", cname, name, err)
			}
			if !bytes.Equal(got.Materialize(), want) {
				t.Errorf("%s encodes %s differently from the golden bytes", cname, name)
			}
			got.Free()
			back := m.ProtoReflect().New().Interface()
			if err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(want)}, back); err != nil {
				t.Fatalf("%s decoding %s: %v", cname, name, err)
			}
			if !proto.Equal(back, m) {
				t.Errorf("%s decodes %s to\n%v\nwant\n%v", cname, name, back, m)
			}
		}
	}
}

func readGolden(t *testing.T, name string) []byte {
	t.Helper()
	text, err := os.ReadFile(filepath.Join("testdata", name+".hex"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := hex.DecodeString(strings.ReplaceAll(string(text), "\n", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCodecOtherMessages: messages without generated methods (go-plugin's,
// the health service's) go through protobuf-go both ways.
func TestCodecOtherMessages(t *testing.T) {
	for cname, c := range codecs() {
		b, err := c.Marshal(wrapperspb.String("plain"))
		if err != nil {
			t.Fatal(err)
		}
		var back wrapperspb.StringValue
		if err := c.Unmarshal(b, &back); err != nil || back.GetValue() != "plain" {
			t.Errorf("%s: %q, %v", cname, back.GetValue(), err)
		}
	}
}

// TestCodecLargeMessage: a message above gRPC's pooling threshold is
// encoded into a pooled buffer and survives that buffer's return to the
// pool once decoded.
func TestCodecLargeMessage(t *testing.T) {
	big := bytes.Repeat([]byte(`{"role":"user","content":"x"}`), 40_000)
	m := &pb.BeforeCompactRequest{SessionId: "s1", PathEntries: [][]byte{big, big[:7]}}
	want, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	for cname, c := range codecs() {
		b, err := c.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b.Materialize(), want) {
			t.Errorf("%s: large message encoded differently", cname)
		}
		var back pb.BeforeCompactRequest
		err = c.Unmarshal(b, &back)
		b.Free()
		if err != nil {
			t.Fatal(err)
		}
		scribble := make([]byte, 2<<20) // reuse of the freed buffer must not show
		for i := range scribble {
			scribble[i] = 'z'
		}
		if !proto.Equal(&back, m) {
			t.Errorf("%s: large message decoded differently", cname)
		}
	}
}

// TestCodecUTF8: what the host receives is checked as
// protobuf-go checks it — a string field that is not valid UTF-8 is
// refused — and only a plugin's server, whose peer is its host, skips the
// check.
func TestCodecUTF8(t *testing.T) {
	bad := withInvalidUTF8(t, &pb.BeforeCompactResponse{Result: &pb.BeforeCompactResponse_Cancel{Cancel: &pb.Cancel{Reason: placeholder}}})
	var m pb.BeforeCompactResponse
	if err := encoding.GetCodecV2("proto").Unmarshal(mem.BufferSlice{mem.SliceBuffer(bad)}, &m); err == nil {
		t.Error("the registered codec accepted a string that is not UTF-8")
	}
	if err := wire.TrustingCodec.Unmarshal(mem.BufferSlice{mem.SliceBuffer(bad)}, &m); err != nil {
		t.Errorf("the plugin server's codec: %v", err)
	}
}

const placeholder = "PLACEHOLDER"

// withInvalidUTF8 encodes m, whose one string field is placeholder, with
// that string's bytes replaced by bytes that are not UTF-8.
func withInvalidUTF8(t *testing.T, m proto.Message) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Count(b, []byte(placeholder)) != 1 {
		t.Fatalf("placeholder not found once in %x", b)
	}
	return bytes.Replace(b, []byte(placeholder), bytes.Repeat([]byte{0xff}, len(placeholder)), 1)
}

// FuzzCodecAgreesWithProtobuf: on any bytes, the generated decoder (a
// plugin server's) neither panics nor hangs, and accepts what protobuf-go
// accepts, with the same known fields. Where the
// two disagree it is over what a host never sends, its fields being typed
// by the same .proto: the generated code refuses a field of the wrong wire
// type (protobuf-go keeps it as an unknown field), and accepts strings that
// are not UTF-8 and malformed groups among unknown fields (protobuf-go
// refuses both).
func FuzzCodecAgreesWithProtobuf(f *testing.F) {
	for name := range goldenCases() {
		text, err := os.ReadFile(filepath.Join("testdata", name+".hex"))
		if err != nil {
			f.Fatal(err)
		}
		b, _ := hex.DecodeString(strings.ReplaceAll(string(text), "\n", ""))
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, newMsg := range []func() proto.Message{
			func() proto.Message { return &pb.BeforeCompactRequest{} },
			func() proto.Message { return &pb.BeforeCompactResponse{} },
			func() proto.Message { return &pb.CompactingResponse{} },
		} {
			viaProto, viaVT := newMsg(), newMsg()
			perr := proto.Unmarshal(data, viaProto)
			verr := viaVT.(interface{ UnmarshalVT([]byte) error }).UnmarshalVT(data)
			switch {
			case perr == nil && verr != nil:
				if strings.Contains(verr.Error(), "wrong wireType") {
					continue
				}
				t.Fatalf("%T: protobuf-go accepts, the generated code refuses: %v", viaProto, verr)
			case perr != nil && verr == nil:
				if !strings.Contains(perr.Error(), "UTF-8") && !strings.Contains(perr.Error(), "invalid wire-format") {
					t.Fatalf("%T: the generated code accepts what protobuf-go refuses: %v", viaProto, perr)
				}
			case perr == nil:
				// Unknown fields are kept as their bytes, which may differ
				// for a non-canonical encoding: compare the known fields.
				vtBytes, err := viaVT.(interface{ MarshalVT() ([]byte, error) }).MarshalVT()
				if err != nil {
					t.Fatalf("%T: re-encoding: %v", viaProto, err)
				}
				known, knownVT := newMsg(), newMsg()
				discard := proto.UnmarshalOptions{DiscardUnknown: true}
				if err := discard.Unmarshal(data, known); err != nil {
					t.Fatal(err)
				}
				if err := discard.Unmarshal(vtBytes, knownVT); err != nil {
					t.Fatalf("%T: the generated code re-encoded to bytes protobuf-go refuses: %v", viaProto, err)
				}
				if !proto.Equal(known, knownVT) {
					t.Fatalf("%T: decoded differently", viaProto)
				}
			}
		}
	})
}
