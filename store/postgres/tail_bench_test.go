package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/internal/pgtest"
	"github.com/pith-dev/pith/store/postgres"
)

// BenchmarkPostgresTail is the catch-up read pith serve makes before
// every call, on sessions grown as a busy minute grows them and with the
// table's statistics up to date: the state in which the plan cache
// planned the query afresh at every call. "nothing-new" reads at the
// end (the common case); "one-new" one line behind. "statement" is the
// query that pith_tail replaced, for the comparison.
func BenchmarkPostgresTail(b *testing.B) {
	ctx := context.Background()
	url := pgtest.NewDatabase(b)
	st, err := postgres.Open(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	const sessions, lines = 8, 4000
	names := make([]string, sessions)
	for i := range names {
		names[i] = fmt.Sprintf("bench/tail-%d.jsonl", i)
		if err := st.Create(ctx, names[i], []byte(`{"type":"session","version":3,"id":"s`+fmt.Sprint(i)+`","timestamp":"2026-01-01T00:00:00Z","cwd":"/w"}`+"\n")); err != nil {
			b.Fatal(err)
		}
		last := ""
		for n := 0; n < lines; n += 200 {
			drafts := make([]session.Draft, 200)
			for j := range drafts {
				m, _ := json.Marshal(map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": fmt.Sprintf("message %d with some text to make it a realistic line of a session", n+j)}}, "timestamp": 1})
				drafts[j] = session.Draft{Type: session.TypeMessage, Fields: map[string]json.RawMessage{"message": m}}
			}
			es, err := st.Append(ctx, names[i], last, drafts...)
			if err != nil {
				b.Fatal(err)
			}
			last = es[len(es)-1].ID
		}
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "ANALYZE"); err != nil {
		b.Fatal(err)
	}
	for _, behind := range []int{0, 1} {
		label := map[int]string{0: "nothing-new", 1: "one-new"}[behind]
		b.Run(label, func(b *testing.B) {
			i := 0
			for b.Loop() {
				if _, _, err := st.Tail(ctx, names[i%sessions], lines+1-behind); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
		b.Run(label+"/statement", func(b *testing.B) {
			i := 0
			for b.Loop() {
				rows, err := conn.Query(ctx, `SELECT s.last_seq, l.raw FROM pith_sessions s
					LEFT JOIN pith_lines l ON l.session = s.name AND l.seq > $2
					WHERE s.name = $1 ORDER BY l.seq`, names[i%sessions], lines+1-behind)
				if err != nil {
					b.Fatal(err)
				}
				for rows.Next() {
				}
				if err := rows.Err(); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}
