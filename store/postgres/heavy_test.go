package postgres_test

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/internal/pgtest"
	"github.com/pith-dev/pith/store"
	"github.com/pith-dev/pith/store/postgres"
	"github.com/pith-dev/pith/store/storetest"
)

// heavyCount is PITH_HEAVY_ENTRIES, default 100 000 (about what one
// 16 MiB append of tiny entries holds).
func heavyCount() int {
	if n, err := strconv.Atoi(os.Getenv("PITH_HEAVY_ENTRIES")); err == nil && n > 0 {
		return n
	}
	return 100_000
}

// TestHeavyManyTinyEntries (PITH_HEAVY=1): one append of many tiny
// entries commits whole, and a session of that many entries round-trips
// and is caught up with. It reports the times; nothing is asserted on
// them.
func TestHeavyManyTinyEntries(t *testing.T) {
	if os.Getenv("PITH_HEAVY") == "" {
		t.Skip("PITH_HEAVY=1 runs it")
	}
	url := pgtest.NewDatabase(t)
	ctx := context.Background()
	s, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	n := heavyCount()
	name := "heavy/tiny.jsonl"
	if err := s.Create(ctx, name, []byte(storetest.Sample)); err != nil {
		t.Fatal(err)
	}
	h, err := store.OpenSession(ctx, s, name, store.SessionOptions{Holder: "A", Timeout: 10 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	drafts := make([]session.Draft, n)
	for i := range drafts {
		drafts[i] = session.Draft{Type: session.TypeCustom, Fields: map[string]any{"customType": "t", "data": i}}
	}
	start := time.Now()
	es, err := h.Append(drafts...)
	if err != nil || len(es) != n {
		t.Fatalf("append of %d entries: %d, %v", n, len(es), err)
	}
	t.Logf("one append of %d tiny entries: %v", n, time.Since(start))
	start = time.Now()
	f, err := s.Load(ctx, name)
	if err != nil || len(f.Entries) != n+2 {
		t.Fatalf("load: %v", err)
	}
	t.Logf("load of %d entries: %v", n+2, time.Since(start))
	other, err := store.OpenSession(ctx, s, name, store.SessionOptions{Holder: "B"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Append(drafts[:1]...); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	if err := other.Refresh(ctx); err != nil || len(other.File().Entries) != n+3 {
		t.Fatalf("refresh: %v", err)
	}
	t.Logf("catch-up of one entry on a %d-entry session: %v", n+3, time.Since(start))
}

// TestHeavyHugeEntry (PITH_HEAVY=1): a 100 MB entry is appended whole,
// read back, caught up with by another host, and the catch-up after it
// does not read it again. It reports the times.
func TestHeavyHugeEntry(t *testing.T) {
	if os.Getenv("PITH_HEAVY") == "" {
		t.Skip("PITH_HEAVY=1 runs it")
	}
	url := pgtest.NewDatabase(t)
	ctx := context.Background()
	s, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	name := "heavy/huge.jsonl"
	if err := s.Create(ctx, name, []byte(storetest.Sample)); err != nil {
		t.Fatal(err)
	}
	opts := store.SessionOptions{Holder: "A", Timeout: 10 * time.Minute}
	a, err := store.OpenSession(ctx, s, name, opts)
	if err != nil {
		t.Fatal(err)
	}
	opts.Holder = "B"
	b, err := store.OpenSession(ctx, s, name, opts)
	if err != nil {
		t.Fatal(err)
	}
	big := make([]byte, 100<<20)
	for i := range big {
		big[i] = 'a' + byte(i%26)
	}
	start := time.Now()
	es, err := a.Append(session.Draft{Type: session.TypeCustom, Fields: map[string]any{"customType": "big", "data": string(big)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("append of a %d MB entry: %v", len(es[0].Raw)>>20, time.Since(start))
	start = time.Now()
	if err := b.Refresh(ctx); err != nil || len(b.File().Entries) != 3 {
		t.Fatalf("catch-up: %v", err)
	}
	t.Logf("another host's catch-up with it: %v", time.Since(start))
	if _, err := a.Append(session.Draft{Type: session.TypeCustom, Fields: map[string]any{"customType": "small"}}); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	if err := b.Refresh(ctx); err != nil || len(b.File().Entries) != 4 {
		t.Fatalf("catch-up: %v", err)
	}
	t.Logf("the catch-up after it (one small entry): %v", time.Since(start))
	data, err := s.Export(ctx, name)
	if err != nil || len(data) < len(big) {
		t.Fatalf("export: %d bytes, %v", len(data), err)
	}
}
