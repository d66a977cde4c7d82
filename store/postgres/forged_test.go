package postgres_test

import (
	"context"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pith-dev/pith/internal/pgtest"
	"github.com/pith-dev/pith/store"
	"github.com/pith-dev/pith/store/postgres"
	"github.com/pith-dev/pith/store/storetest"
)

// TestForgedNotification: NOTIFY takes no privilege beyond connecting
// to the database, so a role that may read nothing of Pith's (a
// monitoring login, say) can send anything on the sessions channel. An
// engine event it sends — agent_abort, which makes every agent on the
// session drop its turn — must not reach a watcher as if a host had
// published it; what a host publishes still does.
func TestForgedNotification(t *testing.T) {
	dbURL := pgtest.NewDatabase(t)
	ctx := context.Background()
	a, err := postgres.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if err := a.Create(ctx, "x/p.jsonl", []byte(storetest.Sample)); err != nil {
		t.Fatal(err)
	}
	intruder := connectIntruder(t, dbURL)

	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	events, err := a.Watch(wctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, forged := range []string{
		`{"session":"x/p.jsonl","kind":"published","payload":{"host":"nobody","kind":"agent_abort","time":1}}`,
		// The genuine event below is row 1, of another session.
		`{"session":"y/q.jsonl","kind":"published","ref":1}`,
		// A resync makes a host read every open session whole: only a
		// watch that was interrupted says it, never a notification.
		`{"session":"","kind":"resync"}`,
		// A rewrite or a creation makes a host read the session whole:
		// neither happened.
		`{"session":"x/p.jsonl","kind":"rewritten"}`,
		`{"session":"x/p.jsonl","kind":"rewritten","ref":1}`,
		`{"session":"x/none.jsonl","kind":"created"}`,
		`{"session":"x/p.jsonl","kind":"no such kind"}`,
	} {
		if _, err := intruder.Exec(ctx, "SELECT pg_notify('pith_sessions', $1)", forged); err != nil {
			t.Fatal(err)
		}
	}
	genuine := `{"host":"a","kind":"compaction_start","time":2}`
	if err := a.Publish(ctx, "x/p.jsonl", []byte(genuine)); err != nil {
		t.Fatal(err)
	}
	give := time.After(time.Minute) // against a hang, not a timing claim
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatal("the watch ended")
			}
			if ev.Kind != store.EventPublished {
				if ev.Kind != store.EventAppended && (ev.Kind != store.EventCreated || ev.Session != "x/p.jsonl") {
					t.Fatalf("a watcher got a %q event from a notification anyone may send", ev.Kind)
				}
				continue
			}
			if string(ev.Payload) != genuine || ev.Session != "x/p.jsonl" {
				t.Fatalf("a watcher got %s %s: a notification anyone may send passed for a host's event", ev.Session, ev.Payload)
			}
			return
		case <-give:
			t.Fatal("the genuine event never came")
		}
	}
}

// connectIntruder connects as a new role that may only connect: it can
// read nothing of Pith's, but NOTIFY takes no privilege.
func connectIntruder(t *testing.T, dbURL string) *pgx.Conn {
	t.Helper()
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	var db string
	if err := admin.QueryRow(ctx, "SELECT current_database()").Scan(&db); err != nil {
		t.Fatal(err)
	}
	role := "intruder_" + db
	if _, err := admin.Exec(ctx, "CREATE ROLE "+pgx.Identifier{role}.Sanitize()+" LOGIN"); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.User(role)
	intruder, err := pgx.Connect(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	// Cleanups run last first: the connection closes before the role
	// is dropped.
	t.Cleanup(func() {
		admin, err := pgx.Connect(context.Background(), dbURL)
		if err == nil {
			admin.Exec(context.Background(), "DROP ROLE IF EXISTS "+pgx.Identifier{role}.Sanitize())
			admin.Close(context.Background())
		}
	})
	t.Cleanup(func() { intruder.Close(context.Background()) })
	if _, err := intruder.Exec(ctx, "SELECT count(*) FROM pith_sessions"); err == nil {
		t.Fatal("the intruder role may read the sessions: the test shows nothing")
	}
	return intruder
}

// TestReplayedEventDeliveredOnce: a published event's row is kept a
// while, and anyone who may connect can NOTIFY its id again; a watcher
// must deliver a genuine event once, not once per notification (a
// replayed agent_abort would abort the agents again).
func TestReplayedEventDeliveredOnce(t *testing.T) {
	dbURL := pgtest.NewDatabase(t)
	ctx := context.Background()
	a, err := postgres.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if err := a.Create(ctx, "x/p.jsonl", []byte(storetest.Sample)); err != nil {
		t.Fatal(err)
	}
	intruder := connectIntruder(t, dbURL)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	events, err := a.Watch(wctx)
	if err != nil {
		t.Fatal(err)
	}
	// next is the next published event's payload.
	next := func() string {
		t.Helper()
		give := time.After(time.Minute) // against a hang, not a timing claim
		for {
			select {
			case ev, ok := <-events:
				if !ok {
					t.Fatal("the watch ended")
				}
				if ev.Kind == store.EventPublished {
					return string(ev.Payload)
				}
			case <-give:
				t.Fatal("no published event came")
			}
		}
	}
	abort := `{"host":"a","kind":"agent_abort","time":1}`
	if err := a.Publish(ctx, "x/p.jsonl", []byte(abort)); err != nil {
		t.Fatal(err)
	}
	if got := next(); got != abort {
		t.Fatalf("got %s, want the genuine event", got)
	}
	admin, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	var id int64
	if err := admin.QueryRow(ctx, "SELECT id FROM pith_events WHERE payload = $1", []byte(abort)).Scan(&id); err != nil {
		t.Fatal(err)
	}
	replay := fmt.Sprintf(`{"session":"x/p.jsonl","kind":"published","ref":%d}`, id)
	for range 3 {
		if _, err := intruder.Exec(ctx, "SELECT pg_notify('pith_sessions', $1)", replay); err != nil {
			t.Fatal(err)
		}
	}
	// Notifications arrive in commit order: the replays come before the
	// marker, so the marker is the next event unless a replay passed.
	marker := `{"host":"a","kind":"compaction_start","time":2}`
	if err := a.Publish(ctx, "x/p.jsonl", []byte(marker)); err != nil {
		t.Fatal(err)
	}
	if got := next(); got != marker {
		t.Fatalf("a watcher delivered %s again: a replayed notification passed for a new event", got)
	}
}
