package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/internal/pgtest"
	"github.com/pith-dev/pith/store"
	"github.com/pith-dev/pith/store/postgres"
	"github.com/pith-dev/pith/store/storetest"
)

func TestMain(m *testing.M) {
	if url := os.Getenv(envChildURL); url != "" {
		if os.Getenv(envChildRole) == "compactor" {
			os.Exit(childCompactor(url))
		}
		os.Exit(childAppender(url, os.Getenv(envChildTag)))
	}
	pgtest.Main(m)
}

func TestPostgresConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) func() store.Store {
		url := pgtest.NewDatabase(t)
		return func() store.Store {
			s, err := postgres.Open(context.Background(), url)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}
	})
}

func TestPostgresSession(t *testing.T) {
	storetest.RunSession(t, func(t *testing.T) func() store.Store {
		url := pgtest.NewDatabase(t)
		return func() store.Store {
			s, err := postgres.Open(context.Background(), url)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}
	})
}

// TestSessionUnavailable: with the database down, a store.Session's
// writes fail with ErrUnavailable and write nothing; once it is back the
// same Session goes on.
func TestSessionUnavailable(t *testing.T) {
	url := pgtest.NewDatabase(t)
	ctx := context.Background()
	s, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Create(ctx, "u.jsonl", []byte(storetest.Sample)); err != nil {
		t.Fatal(err)
	}
	h, err := store.OpenSession(ctx, s, "u.jsonl", store.SessionOptions{Holder: "A", Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	draft := func(text string) session.Draft {
		return session.Draft{Type: session.TypeMessage, Fields: map[string]any{"message": map[string]any{"role": "user", "content": text, "timestamp": 1}}}
	}
	pgtest.Stop(t)
	restarted := false
	defer func() {
		if !restarted {
			pgtest.Restart(t)
		}
	}()
	if _, err := h.Append(draft("lost"), draft("lost too")); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("append with the database down: %v, want ErrUnavailable", err)
	}
	if _, _, err := h.HoldLease(ctx); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("lease with the database down: %v, want ErrUnavailable", err)
	}
	pgtest.Restart(t)
	restarted = true
	es, err := h.Append(draft("after"))
	if err != nil {
		t.Fatalf("append after the restart: %v", err)
	}
	f, err := s.Load(ctx, "u.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(f.Entries); n != 3 || store.LastID(f) != es[0].ID {
		t.Fatalf("%d entries, last %s; want the 2 imported and the one appended after the restart", n, store.LastID(f))
	}
}

// TestPublishAcrossHosts: what one host publishes reaches another
// host's Watch (NOTIFY), as engine events must.
func TestPublishAcrossHosts(t *testing.T) {
	url := pgtest.NewDatabase(t)
	ctx := context.Background()
	a, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := a.Create(ctx, "x/p.jsonl", []byte(storetest.Sample)); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	events, err := b.Watch(wctx)
	if err != nil {
		t.Fatal(err)
	}
	payload := `{"kind":"compaction_end","entryId":"abcd1234"}`
	if err := a.Publish(ctx, "x/p.jsonl", []byte(payload)); err != nil {
		t.Fatal(err)
	}
	for ev := range events {
		if ev.Kind == store.EventPublished {
			if ev.Session != "x/p.jsonl" || string(ev.Payload) != payload {
				t.Fatalf("event %+v (payload %s)", ev, ev.Payload)
			}
			return
		}
	}
	t.Fatal("the watch ended before the published event")
}

// TestDatabaseRestart stops the server mid-use: calls fail with
// ErrUnavailable and write nothing, then everything resumes by itself,
// Watch included, which reports a resync (a restarted server may have
// lost a commit it had reported: asynchronous commit) before a change
// made after.
func TestDatabaseRestart(t *testing.T) {
	url := pgtest.NewDatabase(t)
	ctx := context.Background()
	s, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Create(ctx, "r.jsonl", []byte(storetest.Sample)); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	events, err := s.Watch(wctx)
	if err != nil {
		t.Fatal(err)
	}
	draft := session.Draft{Type: session.TypeMessage, Fields: map[string]any{"message": map[string]any{"role": "user", "content": "x", "timestamp": 1}}}
	pgtest.Stop(t)
	restarted := false
	defer func() {
		if !restarted {
			pgtest.Restart(t)
		}
	}()
	if _, err := s.Append(ctx, "r.jsonl", "aaaa0002", draft); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("append with the database down: %v, want ErrUnavailable", err)
	}
	if _, err := s.Export(ctx, "r.jsonl"); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("export with the database down: %v, want ErrUnavailable", err)
	}
	pgtest.Restart(t)
	restarted = true
	if got, err := s.Export(ctx, "r.jsonl"); err != nil || string(got) != storetest.Sample {
		t.Fatalf("after restart: %v (half-written: %v)", err, string(got) != storetest.Sample)
	}
	if _, err := s.Append(ctx, "r.jsonl", "aaaa0002", draft); err != nil {
		t.Fatalf("append after restart: %v", err)
	}
	// The watcher reconnects: a resync, then later changes are seen.
	resync := false
	for {
		f, _ := s.Load(ctx, "r.jsonl")
		if _, err := s.Append(ctx, "r.jsonl", store.LastID(f), draft); err != nil {
			t.Fatal(err)
		}
		select {
		case ev := <-events:
			switch ev.Kind {
			case store.EventResync:
				resync = true
			case store.EventAppended:
				if !resync {
					t.Fatal("a change after the restart came before the resync")
				}
				return
			}
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func FuzzPostgresRoundTrip(f *testing.F) {
	for _, s := range storetest.Seeds {
		f.Add([]byte(s))
	}
	url := pgtest.NewDatabase(f)
	s, err := postgres.Open(context.Background(), url)
	if err != nil {
		f.Fatal(err)
	}
	defer s.Close()
	n := 0
	f.Fuzz(func(t *testing.T, data []byte) {
		n++
		storetest.RoundTrip(t, s, fmt.Sprintf("f%d-%d.jsonl", os.Getpid(), n), data)
	})
}

func pgOpener(b *testing.B) func() store.Store {
	url := pgtest.NewDatabase(b)
	return func() store.Store {
		s, err := postgres.Open(context.Background(), url)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		return s
	}
}

func BenchmarkPostgresAppend(b *testing.B) {
	for _, hosts := range []int{1, 3} {
		b.Run(fmt.Sprintf("hosts=%d/own-sessions", hosts), func(b *testing.B) { storetest.BenchAppend(b, pgOpener(b), hosts, false) })
		b.Run(fmt.Sprintf("hosts=%d/one-session", hosts), func(b *testing.B) { storetest.BenchAppend(b, pgOpener(b), hosts, true) })
	}
}

func BenchmarkPostgresSessionAppend(b *testing.B) {
	b.Run("one-host", func(b *testing.B) { storetest.BenchSessionAppend(b, pgOpener(b), 1, 2000) })
	b.Run("two-hosts", func(b *testing.B) { storetest.BenchSessionAppend(b, pgOpener(b), 2, 2000) })
	b.Run("three-hosts", func(b *testing.B) { storetest.BenchSessionAppend(b, pgOpener(b), 3, 2000) })
}

func BenchmarkPostgresContext(b *testing.B) {
	for _, hosts := range []int{1, 3} {
		b.Run(fmt.Sprintf("hosts=%d", hosts), func(b *testing.B) { storetest.BenchContext(b, pgOpener(b), hosts, 2000) })
	}
}

func BenchmarkPostgresSessionRefresh(b *testing.B) {
	b.Run("2000-entries", func(b *testing.B) { storetest.BenchSessionRefresh(b, pgOpener(b), 2000) })
	b.Run("20000-entries", func(b *testing.B) { storetest.BenchSessionRefresh(b, pgOpener(b), 20000) })
}
