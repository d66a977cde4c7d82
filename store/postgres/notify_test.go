package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/jackc/pgx/v5"
	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/internal/pgtest"
	"github.com/pith-dev/pith/store"
	"github.com/pith-dev/pith/store/postgres"
	"github.com/pith-dev/pith/store/storetest"
)

// ownerRole makes a role that may log in and owns the test's database
// (so it can make Pith's schema) but is no superuser, so privileges hold
// for it, and returns the database's URL for it. The role and the
// database go at the end of the test, the database first (it is the
// role's).
func ownerRole(t *testing.T, dbURL string) string {
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
	role := "owner_" + db
	for _, q := range []string{
		"CREATE ROLE " + pgx.Identifier{role}.Sanitize() + " LOGIN",
		"ALTER DATABASE " + pgx.Identifier{db}.Sanitize() + " OWNER TO " + pgx.Identifier{role}.Sanitize(),
	} {
		if _, err := admin.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		other, err := withDatabase(dbURL, "postgres")
		if err != nil {
			return
		}
		c, err := pgx.Connect(context.Background(), other)
		if err != nil {
			return
		}
		defer c.Close(context.Background())
		c.Exec(context.Background(), "DROP DATABASE IF EXISTS "+pgx.Identifier{db}.Sanitize()+" WITH (FORCE)")
		c.Exec(context.Background(), "DROP ROLE IF EXISTS "+pgx.Identifier{role}.Sanitize())
	})
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.User(role)
	return u.String()
}

// syncBuffer is a log's output that a test reads while the store writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// logTo gives s a logger and returns what it wrote.
func logTo(s *postgres.Store) *syncBuffer {
	b := &syncBuffer{}
	s.SetLogger(hclog.New(&hclog.LoggerOptions{Output: b}))
	return b
}

func withDatabase(dbURL, db string) (string, error) {
	u, err := url.Parse(dbURL)
	if err != nil {
		return "", err
	}
	u.Path = "/" + db
	return u.String(), nil
}

// collector reads a watch's events and counts them by session, kind and
// payload.
type collector struct {
	t      *testing.T
	events <-chan store.Event
	seen   map[string]int
}

func collect(t *testing.T, events <-chan store.Event) *collector {
	return &collector{t: t, events: events, seen: map[string]int{}}
}

// openStore opens the store at url for the test, closed at its end.
func openStore(t *testing.T, url string) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// watch collects what s's watch reports, until the test ends.
func watch(t *testing.T, s *postgres.Store) *collector {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	events, err := s.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return collect(t, events)
}

func key(ev store.Event) string {
	return ev.Session + " " + ev.Kind + " " + string(ev.Payload)
}

// until reads events until every one of want has come at least once.
func (c *collector) until(want ...store.Event) {
	c.t.Helper()
	give := time.After(time.Minute) // against a hang, not a timing claim
	for {
		missing := ""
		for _, w := range want {
			if c.seen[key(w)] == 0 {
				missing = key(w)
			}
		}
		if missing == "" {
			return
		}
		select {
		case ev, ok := <-c.events:
			if !ok {
				c.t.Fatal("the watch ended")
			}
			c.seen[key(ev)]++
		case <-give:
			c.t.Fatalf("never came: %s (got %v)", missing, c.seen)
		}
	}
}

// once fails for each of want that came more than once.
func (c *collector) once(want ...store.Event) {
	c.t.Helper()
	for _, w := range want {
		if n := c.seen[key(w)]; n != 1 {
			c.t.Errorf("%s came %d times, want once", key(w), n)
		}
	}
}

func msgDraft(text string) session.Draft {
	return session.Draft{Type: session.TypeMessage, Fields: map[string]any{"message": map[string]any{"role": "user", "content": text, "timestamp": 1}}}
}

// changeEverything makes one of each change a watch reports, through s,
// and returns the events another host's watch must deliver: the session
// created, appended and rewritten (under a lease, taken, renewed and
// given back), and two published events.
func changeEverything(t *testing.T, s *postgres.Store, name string) []store.Event {
	t.Helper()
	ctx := context.Background()
	if err := s.Create(ctx, name, []byte(storetest.Sample)); err != nil {
		t.Fatalf("create: %v", err)
	}
	es, err := s.Append(ctx, name, "aaaa0002", msgDraft("one"))
	if err != nil {
		t.Fatalf("append: %v", err)
	}
	l, err := s.AcquireLease(ctx, name, "h", time.Minute)
	if err != nil {
		t.Fatalf("acquire lease: %v", err)
	}
	if l, err = s.RenewLease(ctx, l, time.Minute); err != nil {
		t.Fatalf("renew lease: %v", err)
	}
	es, err = s.AppendLeased(ctx, l, es[0].ID, msgDraft("two"))
	if err != nil {
		t.Fatalf("leased append: %v", err)
	}
	data, err := s.Export(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Rewrite(ctx, l, es[0].ID, data); err != nil {
		t.Fatalf("rewrite: %v", err)
	}
	if err := s.ReleaseLease(ctx, l); err != nil {
		t.Fatalf("release lease: %v", err)
	}
	want := []store.Event{
		{Session: name, Kind: store.EventCreated},
		{Session: name, Kind: store.EventRewritten},
	}
	for i := range 2 {
		p := fmt.Sprintf(`{"host":"a","kind":"compaction_start","time":%d,"session":%q}`, i, name)
		if err := s.Publish(ctx, name, []byte(p)); err != nil {
			t.Fatalf("publish: %v", err)
		}
		want = append(want, store.Event{Session: name, Kind: store.EventPublished, Payload: []byte(p)})
	}
	return want
}

// settle publishes a marker through s and reads events until it came, so
// that anything delivered twice before it has been counted.
func (c *collector) settle(s *postgres.Store, name string) {
	c.t.Helper()
	marker := fmt.Sprintf(`{"host":"a","kind":"marker","time":%d}`, time.Now().UnixNano())
	if err := s.Publish(context.Background(), name, []byte(marker)); err != nil {
		c.t.Fatal(err)
	}
	c.until(store.Event{Session: name, Kind: store.EventPublished, Payload: []byte(marker)})
}

// TestWritesCommitWithoutNotify: NOTIFY refused to Pith's role (as it
// would fail for everyone once a role that LISTENs and never reads has
// filled the cluster's queue). Creating, appending, leasing, rewriting
// and publishing still commit, and another host's watch still reports
// each change, once.
func TestWritesCommitWithoutNotify(t *testing.T) {
	dbURL := pgtest.NewDatabase(t)
	ctx := context.Background()
	pith := ownerRole(t, dbURL)
	admin, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "REVOKE EXECUTE ON FUNCTION pg_notify(text, text) FROM PUBLIC"); err != nil {
		t.Fatal(err)
	}
	probe, err := pgx.Connect(ctx, pith)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := probe.Exec(ctx, "SELECT pg_notify('pith_sessions', '')"); err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Fatalf("NOTIFY as Pith's role: %v, want permission denied (else the test shows nothing)", err)
	}
	probe.Close(ctx)

	a := openStore(t, pith)
	logged := logTo(a)
	b := openStore(t, pith)
	c := watch(t, b)
	want := changeEverything(t, a, "n/s.jsonl")
	c.until(want...)
	// An append is reported on its own when nothing else happened to the
	// session since the watch last looked.
	f, err := a.Load(ctx, "n/s.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Append(ctx, "n/s.jsonl", store.LastID(f), msgDraft("three")); err != nil {
		t.Fatalf("append: %v", err)
	}
	c.until(store.Event{Session: "n/s.jsonl", Kind: store.EventAppended})
	c.settle(a, "n/s.jsonl")
	c.once(want...)
	if c.seen[key(store.Event{Kind: store.EventResync})] != 0 {
		t.Error("a resync was reported with the same server all along")
	}
	a.Close() // the wake-ups are sent, and their failures logged, by then
	if n := strings.Count(logged.String(), "cannot notify"); n != 1 {
		t.Errorf("the refused NOTIFY was logged %d times, want once (a minute apart):\n%s", n, logged.String())
	}
}

// TestWatchMissesNothingWhileNotListening: the watch's connection is
// killed and cannot come back (its role may not connect) while another
// host creates, appends, rewrites and publishes; once it may connect
// again the watch reports every one of those changes, once, without a
// resync (the server is the same: nothing needs rereading).
func TestWatchMissesNothingWhileNotListening(t *testing.T) {
	dbURL := pgtest.NewDatabase(t)
	ctx := context.Background()
	watcherURL := ownerRole(t, dbURL)
	admin, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	var db, role string
	if err := admin.QueryRow(ctx, "SELECT current_database()").Scan(&db); err != nil {
		t.Fatal(err)
	}
	role = "owner_" + db

	// The watcher's role makes the schema (so it owns the tables); the
	// writer is the superuser, who may always connect.
	b := openStore(t, watcherURL)
	logged := logTo(b)
	a := openStore(t, dbURL)
	c := watch(t, b)
	// The watch works before.
	c.settle(a, "before.jsonl")

	if _, err := admin.Exec(ctx, "ALTER ROLE "+pgx.Identifier{role}.Sanitize()+" NOLOGIN"); err != nil {
		t.Fatal(err)
	}
	var killed int
	if err := admin.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE usename = $1`, role).Scan(&killed); err != nil || killed == 0 {
		t.Fatalf("terminated %d of the watcher's backends (%v)", killed, err)
	}
	want := changeEverything(t, a, "gap/s.jsonl")
	// The watch has been trying to reconnect all along.
	if _, err := admin.Exec(ctx, "ALTER ROLE "+pgx.Identifier{role}.Sanitize()+" LOGIN"); err != nil {
		t.Fatal(err)
	}
	c.until(want...)
	c.settle(a, "gap/s.jsonl")
	c.once(want...)
	if c.seen[key(store.Event{Kind: store.EventResync})] != 0 {
		t.Error("a resync was reported though the server never changed")
	}
	if !strings.Contains(logged.String(), "lost the connection watching the store") {
		t.Errorf("the lost connection was not logged:\n%s", logged.String())
	}
}

// TestLateCommitReportedOnce: ids are taken when a transaction first
// writes, commits come in any order. A publish and an append whose
// transactions began before others but commit after the watch has
// looked past those others are still reported, once; and many
// concurrent publishes through three hosts are each reported once.
func TestLateCommitReportedOnce(t *testing.T) {
	dbURL := pgtest.NewDatabase(t)
	ctx := context.Background()
	var hosts [3]*postgres.Store
	for i := range hosts {
		hosts[i] = openStore(t, dbURL)
	}
	a := hosts[0]
	if err := a.Create(ctx, "late/s.jsonl", []byte(storetest.Sample)); err != nil {
		t.Fatal(err)
	}
	c := watch(t, hosts[1])

	// A publish and an append (as Publish and Append write them), held
	// open: their ids are older than everything below.
	slow, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close(ctx)
	tx, err := slow.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	late := `{"host":"slow","kind":"late","time":1}`
	if _, err := tx.Exec(ctx, `INSERT INTO pith_events (session, payload) VALUES ('late/s.jsonl', $1)`, []byte(late)); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `UPDATE pith_sessions SET last_seq = last_seq WHERE name = 'late/s.jsonl'`); err != nil {
		t.Fatal(err)
	}
	// Younger changes commit and are reported: the watch has looked
	// since the held ones took their ids.
	var want []store.Event
	var wg sync.WaitGroup
	errs := make(chan error, 3*20)
	for h, s := range hosts {
		for i := range 20 {
			p := fmt.Sprintf(`{"host":"%d","kind":"k","time":%d}`, h, i)
			want = append(want, store.Event{Session: "late/s.jsonl", Kind: store.EventPublished, Payload: []byte(p)})
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs <- s.Publish(ctx, "late/s.jsonl", []byte(p))
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	c.until(want...)
	c.settle(a, "late/s.jsonl")
	if c.seen[key(store.Event{Session: "late/s.jsonl", Kind: store.EventAppended})] != 0 {
		t.Fatal("an append was reported before it committed")
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	lateEv := store.Event{Session: "late/s.jsonl", Kind: store.EventPublished, Payload: []byte(late)}
	appended := store.Event{Session: "late/s.jsonl", Kind: store.EventAppended}
	c.until(lateEv, appended)
	c.settle(a, "late/s.jsonl")
	c.once(append(want, lateEv, appended)...)
}

// TestWatchAfterRestartDeliversEventsPublishedBeforeItReconnected: an
// event published on a restarted server before a watch has reconnected
// to it (a host that kept its events while the database was down sends
// them at once) is still delivered, once, with the resync. The old watch
// started over from its reconnection's snapshot and never reported it.
func TestWatchAfterRestartDeliversEventsPublishedBeforeItReconnected(t *testing.T) {
	url := pgtest.NewDatabase(t)
	a, b := openStore(t, url), openStore(t, url)
	ctx := context.Background()
	if err := a.Create(ctx, "w/restart.jsonl", []byte(storetest.Sample)); err != nil {
		t.Fatal(err)
	}
	c := watch(t, b)
	pgtest.Stop(t)
	// Down for a while, so that the watch most likely reconnects after
	// the publish below (its back-off has grown): the case the old watch
	// missed. The watch must deliver the event in either order.
	time.Sleep(3 * time.Second)
	pgtest.Restart(t)
	early := store.Event{Session: "w/restart.jsonl", Kind: store.EventPublished, Payload: []byte(`{"n":"early"}`)}
	for {
		err := a.Publish(ctx, early.Session, early.Payload)
		if err == nil {
			break
		}
		if !errors.Is(err, store.ErrUnavailable) {
			t.Fatal(err)
		}
	}
	later := store.Event{Session: "w/restart.jsonl", Kind: store.EventPublished, Payload: []byte(`{"n":"later"}`)}
	c.until(store.Event{Kind: store.EventResync}, early)
	if err := a.Publish(ctx, later.Session, later.Payload); err != nil {
		t.Fatal(err)
	}
	c.until(later)
	c.once(early, later)
}
