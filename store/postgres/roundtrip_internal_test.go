package postgres

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/internal/pgtest"
	"github.com/pith-dev/pith/store"
)

// statementCounter counts the statements the pool sends (BEGIN and
// COMMIT among them), each at least one round trip, but the waker's
// NOTIFY: it is sent after the write, by another goroutine, and no
// writer waits for it.
type statementCounter struct{ n atomic.Int64 }

func (c *statementCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if !strings.Contains(d.SQL, "pg_notify") {
		c.n.Add(1)
	}
	return ctx
}

func (c *statementCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (c *statementCounter) TraceCopyFromStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceCopyFromStartData) context.Context {
	c.n.Add(1)
	return ctx
}

func (c *statementCounter) TraceCopyFromEnd(context.Context, *pgx.Conn, pgx.TraceCopyFromEndData) {}

// TestAppendIsOneStatement: an append, leased or not, of one entry or
// several, is one statement; the wait for the database is what bounds
// appends per second on a busy host (it was eight).
func TestAppendIsOneStatement(t *testing.T) {
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	counter := &statementCounter{}
	cfg.ConnConfig.Tracer = counter
	s, err := openConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Create(ctx, "rt.jsonl", []byte(`{"type":"session","version":3,"id":"h","timestamp":"2026-01-01T00:00:00Z","cwd":"/w"}`+"\n")); err != nil {
		t.Fatal(err)
	}
	msg := session.Draft{Type: session.TypeMessage, Fields: map[string]any{"message": map[string]any{"role": "user", "content": "hi"}}}
	last := ""
	for _, n := range []int{1, 3, 1} {
		drafts := make([]session.Draft, n)
		for i := range drafts {
			drafts[i] = msg
		}
		before := counter.n.Load()
		entries, err := s.Append(ctx, "rt.jsonl", last, drafts...)
		if err != nil {
			t.Fatal(err)
		}
		if got := counter.n.Load() - before; got != 1 {
			t.Errorf("an append of %d entries sent %d statements, want 1", n, got)
		}
		last = entries[len(entries)-1].ID
	}
	lease, err := s.AcquireLease(ctx, "rt.jsonl", "me", store.DefaultLeaseTTL)
	if err != nil {
		t.Fatal(err)
	}
	before := counter.n.Load()
	if _, err := s.AppendLeased(ctx, lease, last, msg); err != nil {
		t.Fatal(err)
	}
	if got := counter.n.Load() - before; got != 1 {
		t.Errorf("a leased append sent %d statements, want 1", got)
	}
}
