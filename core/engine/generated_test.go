package engine

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/internal/sessiongen"
	"github.com/pith-dev/pith/store/files"
	"github.com/pith-dev/pith/summarize/builtin"
)

// TestGeneratedSessions compacts realistic generated sessions (branches,
// earlier compactions, split turns, tool calls) with the built-in
// summarizer and checks that the live context is what the file builds.
func TestGeneratedSessions(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "gen.jsonl")
			if err := sessiongen.GenerateFile(path, sessiongen.Small(seed, 600)); err != nil {
				t.Fatal(err)
			}
			store, err := files.Open(path, files.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			st := DefaultSettings()
			st.KeepRecentTokens = 2000
			s := New(store, Options{Settings: st, Summarizer: builtin.New(builtin.Options{})})
			res, err := s.Compact(context.Background(), "")
			if err != nil {
				t.Fatal(err)
			}
			if res.Entry.Type != session.TypeCompaction || res.TokensAfter <= 0 {
				t.Fatalf("result %+v", res)
			}
			f, err := session.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			want := session.NewTree(f.Entries).BuildContext(session.LeafDefault).Messages
			got := s.Messages()
			j := 0
			for _, m := range want {
				if isOverflowError(m) {
					continue
				}
				if j >= len(got) || !bytes.Equal(got[j].Raw, m.Raw) {
					t.Fatalf("live message %d differs from the file's context", j)
				}
				j++
			}
			if j != len(got) {
				t.Fatalf("live has %d messages, want %d", len(got), j)
			}
		})
	}
}

// BenchmarkAfterTurn measures the per-turn cost of AfterTurn below the
// threshold on a 100 000-entry session: append (one write + fsync under the
// lock), the overflow test and the running token count.
func BenchmarkAfterTurn(b *testing.B) {
	path := filepath.Join(b.TempDir(), "bench.jsonl")
	if err := sessiongen.GenerateFile(path, sessiongen.Benchmark(1, 100000)); err != nil {
		b.Fatal(err)
	}
	store, err := files.Open(path, files.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	st := DefaultSettings()
	st.ContextWindow = 1 << 30 // never above the threshold
	st.Pruning.Enabled = false // BenchmarkAfterTurnPrunePlan measures it
	s := New(store, Options{Summarizer: offline(), Settings: st})
	msg := assistantMsg("Done: the parser now accepts trailing commas in internal/parse/list.go.", 50000, 120)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		out, err := s.AfterTurn(ctx, msg)
		if err != nil || out.Compaction != nil {
			b.Fatal(out, err)
		}
	}
}

// BenchmarkAfterTurnEngine is BenchmarkAfterTurn without the store's
// append: the engine's own bookkeeping per turn (overflow test, staleness,
// live list, running token count, threshold test).
func BenchmarkAfterTurnEngine(b *testing.B) {
	path := filepath.Join(b.TempDir(), "bench.jsonl")
	if err := sessiongen.GenerateFile(path, sessiongen.Benchmark(1, 100000)); err != nil {
		b.Fatal(err)
	}
	store, err := files.Open(path, files.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	st := DefaultSettings()
	st.ContextWindow = 1 << 30
	st.Pruning.Enabled = false
	s := New(store, Options{Summarizer: offline(), Settings: st})
	msg := assistantMsg("Done: the parser now accepts trailing commas in internal/parse/list.go.", 50000, 120)
	e, err := session.ParseEntry([]byte(`{"type":"message","id":"0badc0de","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","message":` + string(msg) + `}`))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := s.afterAppend(ctx, st, e, msg); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStoreAppend is the baseline: the store's append alone (one
// write and fsync under the file lock) on the same session.
func BenchmarkStoreAppend(b *testing.B) {
	path := filepath.Join(b.TempDir(), "bench.jsonl")
	if err := sessiongen.GenerateFile(path, sessiongen.Benchmark(1, 100000)); err != nil {
		b.Fatal(err)
	}
	store, err := files.Open(path, files.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	d, err := session.MessageDraft(assistantMsg("Done: the parser now accepts trailing commas in internal/parse/list.go.", 50000, 120))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := store.Append(d); err != nil {
			b.Fatal(err)
		}
	}
}
