package postgres_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
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

// TestHeavyNotifyQueueFull (PITH_HEAVY=1): the real attack. A role that
// may only connect LISTENs and then sits in an open transaction, so it
// never takes its notifications; NOTIFYs of 7990 bytes (at most 8000) fill the cluster's
// queue (8 GB on PostgreSQL 15: several minutes and that much disk)
// until PostgreSQL refuses every further NOTIFY at COMMIT. Pith's writes
// still commit, and another host's watch still reports them. It reports
// the times.
func TestHeavyNotifyQueueFull(t *testing.T) {
	if os.Getenv("PITH_HEAVY") == "" {
		t.Skip("PITH_HEAVY=1 runs it")
	}
	url := pgtest.NewDatabase(t)
	ctx := context.Background()
	a := openStore(t, url)
	c := watch(t, openStore(t, url))

	intruder := connectIntruder(t, url)
	for _, q := range []string{"LISTEN anything", "BEGIN", "SELECT 1"} {
		if _, err := intruder.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	filler, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer filler.Close(ctx)
	start := time.Now()
	const chunk = 20_000 // 160 MB a transaction
	for i := 0; ; i++ {
		_, err := filler.Exec(ctx, `SELECT pg_notify('pith_fill', lpad(($1 * $2 + n)::text, 7990, 'x')) FROM generate_series(1, $2::int) n`, i, chunk)
		if err != nil {
			if !strings.Contains(err.Error(), "too many notifications") {
				t.Fatalf("filling the queue: %v", err)
			}
			break
		}
		if i%10 == 0 {
			var usage float64
			filler.QueryRow(ctx, "SELECT pg_notification_queue_usage()").Scan(&usage)
			t.Logf("%v: queue %.0f%% full", time.Since(start).Round(time.Second), usage*100)
		}
	}
	t.Logf("the NOTIFY queue is full after %v", time.Since(start).Round(time.Second))
	if _, err := filler.Exec(ctx, "SELECT pg_notify('pith_sessions', '')"); err == nil {
		t.Fatal("a NOTIFY still goes through: the test shows nothing")
	}

	start = time.Now()
	want := changeEverything(t, a, "full/s.jsonl")
	t.Logf("create, append, lease, rewrite and two publishes with the queue full: %v", time.Since(start))
	start = time.Now()
	c.until(want...)
	t.Logf("another host's watch reported them %v later", time.Since(start).Round(time.Millisecond))
	c.settle(a, "full/s.jsonl")
	c.once(want...)
}
