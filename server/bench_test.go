package server

import (
	"context"
	"testing"

	"github.com/pith-dev/pith/client"
)

// BenchmarkAppend and BenchmarkGetContext measure one call through the
// client over loopback gRPC on a session of 100 messages; Append includes
// the store's fsync.
func BenchmarkAppend(b *testing.B) {
	s := benchSession(b)
	m := userMsg("bench", 100)
	for b.Loop() {
		if _, err := s.AppendMessages(context.Background(), m); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGetContext(b *testing.B) {
	s := benchSession(b)
	for b.Loop() {
		if _, err := s.Context(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}

func benchSession(b *testing.B) *client.Session {
	b.Helper()
	cfg := testConfig(b.TempDir())
	cfg.Compaction.Enabled = false
	h := startServer(b, cfg)
	s, err := h.client.Create(context.Background(), "bench.jsonl", "/w")
	if err != nil {
		b.Fatal(err)
	}
	for range 50 {
		if _, err := s.AppendMessages(context.Background(), userMsg("u", 100)); err != nil {
			b.Fatal(err)
		}
		if _, err := s.AfterTurn(context.Background(), assistantMsg("a", 100)); err != nil {
			b.Fatal(err)
		}
	}
	return s
}
