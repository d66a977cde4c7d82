package server

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/pith-dev/pith/client"
	"github.com/pith-dev/pith/config"
	"github.com/pith-dev/pith/internal/pgtest"
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

// BenchmarkAppendWatched is BenchmarkAppend while a WatchEvents stream
// watches the session: each append is announced (entries_appended), and
// the file watch wakes the session's catch-up, which finds nothing new.
func BenchmarkAppendWatched(b *testing.B) {
	s := benchSession(b)
	w, err := s.Watch(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	go func() {
		for {
			if _, err := w.Next(); err != nil {
				return
			}
		}
	}()
	m := userMsg("bench", 100)
	for b.Loop() {
		if _, err := s.AppendMessages(context.Background(), m); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppendMixedEntries is one Append of 20 raw entries
// alternating messages and custom entries (an agent's turn with its
// extension state): one write and one fsync for the call.
func BenchmarkAppendMixedEntries(b *testing.B) {
	s := benchSession(b)
	entries := make([]json.RawMessage, 20)
	for i := range entries {
		if i%2 == 0 {
			entries[i] = json.RawMessage(`{"type":"message","message":{"role":"user","content":[{"type":"text","text":"bench"}],"timestamp":1}}`)
		} else {
			entries[i] = json.RawMessage(`{"type":"custom","customType":"state","data":{"step":1}}`)
		}
	}
	for b.Loop() {
		if _, err := s.AppendEntries(context.Background(), entries...); err != nil {
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

// BenchmarkAppendPostgreSQL and BenchmarkGetContextPostgreSQL are the same
// calls on a PostgreSQL store (internal/pgtest): each first reads what
// other hosts appended, and an append is a transaction checking the last
// entry.
func BenchmarkAppendPostgreSQL(b *testing.B) {
	s := benchStoreSession(b)
	m := userMsg("bench", 100)
	for b.Loop() {
		if _, err := s.AppendMessages(context.Background(), m); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGetContextPostgreSQL(b *testing.B) {
	s := benchStoreSession(b)
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
	return fillBenchSession(b, startServer(b, cfg))
}

func benchStoreSession(b *testing.B) *client.Session {
	b.Helper()
	cfg := testConfig(b.TempDir())
	cfg.Compaction.Enabled = false
	return fillBenchSession(b, startStoreHost(b, cfg, pgtest.NewDatabase(b)))
}

func fillBenchSession(b *testing.B, h *harness) *client.Session {
	b.Helper()
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

// BenchmarkOpenShared is OpenSession of a session already open (another
// agent joining it): name check, one lstat through the root, the lookup.
func BenchmarkOpenShared(b *testing.B) {
	s := benchSession(b)
	c := s.Client()
	for b.Loop() {
		if _, err := c.Open(context.Background(), "bench.jsonl"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOpenPastLimit cycles through 64 small sessions with
// maxOpenSessions 8: nearly every call closes the least recently used one
// and opens (parses) another.
func BenchmarkOpenPastLimit(b *testing.B) {
	cfg := testConfig(b.TempDir())
	cfg.Server.MaxOpenSessions = 8
	benchOpenCycle(b, cfg)
}

// BenchmarkOpenPastShare is BenchmarkOpenPastLimit with the caller's
// share (maxOpenSessionsPerCaller 8) the bound reached instead: the
// caller's own least recently used session is closed.
func BenchmarkOpenPastShare(b *testing.B) {
	cfg := testConfig(b.TempDir())
	cfg.Server.MaxOpenSessionsPerCaller = 8
	benchOpenCycle(b, cfg)
}

func benchOpenCycle(b *testing.B, cfg *config.Config) {
	h := startServer(b, cfg)
	ctx := context.Background()
	names := make([]string, 64)
	for i := range names {
		names[i] = fmt.Sprintf("s%d.jsonl", i)
		s, err := h.client.Create(ctx, names[i], "/w")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.AppendMessages(ctx, userMsg("u", 100)); err != nil {
			b.Fatal(err)
		}
	}
	i := 0
	for b.Loop() {
		if _, err := h.client.Open(ctx, names[i%len(names)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
