package server

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pith-dev/pith/client"
	pb "github.com/pith-dev/pith/internal/gen/pith/session/v1"
	"google.golang.org/grpc/encoding"
)

// bigSession fills a session with about mb megabytes of messages (10 KB
// each, appended 100 at a time) and returns it.
func bigSession(tb testing.TB, h *harness, mb int) *client.Session {
	tb.Helper()
	ctx := context.Background()
	s, err := h.client.Create(ctx, "big.jsonl", "/w")
	if err != nil {
		tb.Fatal(err)
	}
	text := strings.Repeat("word ", 2000)
	batch := make([]json.RawMessage, 100)
	for i := 0; i < mb*1000/10/len(batch); i++ {
		for j := range batch {
			role := "user"
			extra := ""
			if j%2 == 1 {
				role, extra = "assistant", `,"provider":"test","model":"m1","stopReason":"stop"`
			}
			batch[j] = json.RawMessage(fmt.Sprintf(`{"role":%q,"content":[{"type":"text","text":"%d %s"}],"timestamp":%d%s}`, role, i*len(batch)+j, text, time.Now().UnixMilli(), extra))
		}
		if _, err := s.AppendMessages(ctx, batch...); err != nil {
			tb.Fatal(err)
		}
	}
	return s
}

func bigConfig(tb testing.TB) *harness {
	cfg := testConfig(tb.TempDir())
	cfg.Compaction.Enabled = false
	cfg.ContextWindow = 1 << 30
	return startServer(tb, cfg)
}

// BenchmarkGetContext30MB is one GetContext of a 30 MB session through
// the client over loopback gRPC: bytes/op counts both sides (the
// client's decoding of the answer included).
func BenchmarkGetContext30MB(b *testing.B) {
	h := bigConfig(b)
	s := bigSession(b, h, 30)
	b.ResetTimer()
	for b.Loop() {
		if _, err := s.Context(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGetContext30MBServer is the daemon's own share of one
// GetContext of a 30 MB session: the handler and the encoding of its
// answer by the daemon's codec (the transport then reads those buffers
// into frames of its own small ones). held-MB/op is what of the answer
// the call holds in buffers of its own until it is sent (the messages
// it refers to belong to the engine).
func BenchmarkGetContext30MBServer(b *testing.B) {
	h := bigConfig(b)
	s := bigSession(b, h, 30)
	v := &service{s: h.srv}
	codec := answerCodec{encoding.GetCodecV2("proto")}
	ctx := context.Background()
	req := &pb.GetContextRequest{SessionId: s.ID}
	held := 0
	for b.Loop() {
		resp, err := v.GetContext(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		data, err := codec.Marshal(resp)
		if err != nil {
			b.Fatal(err)
		}
		held = data.Len() - referred(resp.Messages)
		data.Free()
	}
	b.ReportMetric(float64(held)/(1<<20), "held-MB/op")
}

// referred is how many bytes of msgs an answer refers to rather than
// copies (answerCodec's rule).
func referred(msgs [][]byte) int {
	n := 0
	for _, m := range msgs {
		if refers(m) {
			n += len(m)
		}
	}
	return n
}
