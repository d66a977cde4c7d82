package postgres

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/pith-dev/pith/internal/pgtest"
)

// lookFixture opens a store on a new database holding sessions sessions
// and events published events (made in bulk, by SQL), and a watcher that
// has seen them all.
func lookFixture(b *testing.B, sessions, events int) (*Store, *watcher, *pgx.Conn) {
	ctx := context.Background()
	url := pgtest.NewDatabase(b)
	s, err := Open(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	for _, q := range []string{
		`INSERT INTO pith_sessions (name, last_seq, last_id) SELECT 'bench/' || i || '.jsonl', 1, ''::bytea FROM generate_series(1, ` + fmt.Sprint(sessions) + `) i`,
		`INSERT INTO pith_events (session, payload) SELECT 'bench/' || i || '.jsonl', '{}'::bytea FROM generate_series(1, ` + fmt.Sprint(events) + `) i`,
		`ANALYZE pith_sessions`, `ANALYZE pith_events`,
	} {
		if _, err := s.pool.Exec(ctx, q); err != nil {
			b.Fatal(err)
		}
	}
	w := &watcher{store: s}
	conn, err := w.connect(ctx)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { conn.Close(context.Background()) })
	return s, w, conn
}

// BenchmarkWatchLook is what one look of one watch costs the database
// when nothing changed and when a few sessions did, beside 10 000
// sessions and 10 000 events nobody touched: it must not grow with them
// (an index range from the snapshot's xmin, not a scan).
func BenchmarkWatchLook(b *testing.B) {
	ctx := context.Background()
	s, w, conn := lookFixture(b, 10_000, 10_000)
	for _, q := range []string{lookSessions, lookEvents} {
		var plan []string
		rows, err := conn.Query(ctx, "EXPLAIN "+q, w.sessionsSeen)
		if err != nil {
			b.Fatal(err)
		}
		plan, err = pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			b.Fatal(err)
		}
		b.Logf("plan:\n%s", strings.Join(plan, "\n"))
	}
	b.Run("nothing-changed", func(b *testing.B) {
		for b.Loop() {
			evs, err := w.look(ctx, conn)
			if err != nil || len(evs) != 0 {
				b.Fatalf("%d events, %v", len(evs), err)
			}
		}
	})
	b.Run("10-appended", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			if _, err := s.pool.Exec(ctx, `UPDATE pith_sessions SET last_seq = last_seq + 1 WHERE name IN (SELECT 'bench/' || i || '.jsonl' FROM generate_series(1, 10) i)`); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			evs, err := w.look(ctx, conn)
			if err != nil || len(evs) != 10 {
				b.Fatalf("%d events, %v", len(evs), err)
			}
		}
	})
}

// TestWaitKeepsTheConnection: a wait that no notification ends (the poll
// interval passed) says to look and leaves the listening connection as
// it was, instead of making the watch reconnect every second; a
// notification ends the wait too.
func TestWaitKeepsTheConnection(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	w := &watcher{store: s}
	conn, err := w.connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var pid uint32
	if err := conn.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := w.wait(ctx, conn); err != nil {
			t.Fatalf("an idle wait: %v", err)
		}
		var now uint32
		if err := conn.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&now); err != nil || now != pid {
			t.Fatalf("after an idle wait: backend %d, %v; want the same connection (%d)", now, err, pid)
		}
		if _, err := w.look(ctx, conn); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.pool.Exec(ctx, "SELECT pg_notify($1, '')", channel); err != nil {
		t.Fatal(err)
	}
	if err := w.wait(ctx, conn); err != nil {
		t.Fatalf("a wait a notification ended: %v", err)
	}
}
