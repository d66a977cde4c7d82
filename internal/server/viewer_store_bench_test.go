package server

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pith-dev/pith/internal/pgtest"
	"github.com/pith-dev/pith/internal/sessiongen"
	"github.com/pith-dev/pith/store/postgres"
	"github.com/pith-dev/pith/viewer"
)

// BenchmarkViewerStoreRefresh100k: the viewer of a 100 000-entry session
// kept in PostgreSQL reads it after one entry was appended through the
// store — "whole" (Reload: the session read and parsed again, what a
// stored session would cost without the incremental reading) or
// "appended" (Refresh, as the store's append event triggers). The time
// includes the append's own round trip.
func BenchmarkViewerStoreRefresh100k(b *testing.B) {
	if m := pgtest.Missing(); m != "" {
		b.Skip("no PostgreSQL: " + m)
	}
	ctx := context.Background()
	st, err := postgres.Open(ctx, pgtest.NewDatabase(b))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	path := filepath.Join(b.TempDir(), "bench.jsonl")
	if err := sessiongen.GenerateFile(path, sessiongen.Benchmark(1, 100_000)); err != nil {
		b.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	const name = "bench/s.jsonl"
	if err := st.Create(ctx, name, data); err != nil {
		b.Fatal(err)
	}
	data = nil
	tail := func(after int) ([]byte, int, error) { return st.Tail(ctx, name, after) }
	for _, mode := range []string{"whole", "appended"} {
		b.Run(mode, func(b *testing.B) {
			h, err := viewer.New(viewer.Options{Name: name, Tail: tail, Debounce: time.Nanosecond})
			if err != nil {
				b.Fatal(err)
			}
			defer h.Close()
			b.ResetTimer()
			for b.Loop() {
				v := h.Version()
				if _, err := st.Append(ctx, name, h.LeafID(), draftOf()); err != nil {
					b.Fatal(err)
				}
				if mode == "whole" {
					h.Reload()
				} else {
					h.Refresh()
				}
				for h.Version() == v {
					time.Sleep(50 * time.Microsecond)
				}
			}
		})
	}
}
