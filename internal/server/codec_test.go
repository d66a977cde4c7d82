package server

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	sessionpb "github.com/pith-dev/pith/internal/gen/pith/session/v1"
)

// rawCodec sends the bytes it is given as the request, as a client that
// encodes its own messages may: the daemon's own decoding must refuse what
// protobuf-go refuses.
type rawCodec struct{}

func (rawCodec) Name() string { return "proto" }
func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	return mem.BufferSlice{mem.SliceBuffer(v.([]byte))}, nil
}
func (rawCodec) Unmarshal(mem.BufferSlice, any) error { return nil }

// TestDaemonRefusesStringsThatAreNotUTF8: the daemon encodes its messages
// with generated code (internal/wire's codec) but still decodes a client's
// requests with protobuf-go, which refuses a string field that is not valid
// UTF-8 — a session id or path made of such bytes never reaches the store.
func TestDaemonRefusesStringsThatAreNotUTF8(t *testing.T) {
	h := startServer(t, testConfig(t.TempDir()))
	b, err := proto.Marshal(&sessionpb.AppendRequest{SessionId: "PLACEHOLDER", Messages: [][]byte{[]byte(`{"role":"user","content":"hi"}`)}})
	if err != nil {
		t.Fatal(err)
	}
	bad := []byte(strings.Replace(string(b), "PLACEHOLDER", strings.Repeat("\xff", len("PLACEHOLDER")), 1))
	conn, err := grpc.NewClient(h.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	err = conn.Invoke(context.Background(), sessionpb.SessionService_Append_FullMethodName, bad, new(struct{}), grpc.ForceCodecV2(rawCodec{}))
	if status.Code(err) != codes.Internal || !strings.Contains(err.Error(), "UTF-8") {
		t.Fatalf("Append with a session id that is not UTF-8: %v; want the request refused as undecodable", err)
	}
}
