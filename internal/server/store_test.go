package server

import (
	"encoding/json"

	pb "github.com/pith-dev/pith/internal/gen/pith/session/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pith-dev/pith/client"
	"github.com/pith-dev/pith/config"
	"github.com/pith-dev/pith/core/engine"
	"github.com/pith-dev/pith/core/explore"
	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/internal/pgtest"
	"github.com/pith-dev/pith/store"
	"github.com/pith-dev/pith/store/postgres"
	"google.golang.org/grpc"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// startStoreHost is startServer on a shared PostgreSQL store: one host of
// several.
func startStoreHost(t testing.TB, cfg *config.Config, url string) *harness {
	t.Helper()
	st, err := postgres.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	return startHarness(t, cfg, st, nil, func() { st.Close() })
}

// TestSharedStoreTwoHosts: two hosts on one database serve one session by
// the same name: a call on either sees what the other wrote, a stale
// append is Aborted (never a fork), and a compaction on one reaches the
// other's WatchEvents.
func TestSharedStoreTwoHosts(t *testing.T) {
	url := pgtest.NewDatabase(t)
	cfg := testConfig(t.TempDir())
	a, b := startStoreHost(t, cfg, url), startStoreHost(t, cfg, url)
	ctx := context.Background()
	sa, err := a.client.Create(ctx, "team/s1.jsonl", "/work")
	if err != nil {
		t.Fatal(err)
	}
	if !sa.Created {
		t.Fatal("not created")
	}
	sb, err := b.client.Create(ctx, "team/s1.jsonl", "/work")
	if err != nil {
		t.Fatal(err)
	}
	if sb.Created || sb.ID != sa.ID {
		t.Fatalf("host B opened %+v, want host A's session %s", sb, sa.ID)
	}
	w, err := sb.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for i := range 6 {
		s := sa
		if i%2 == 1 {
			s = sb
		}
		if _, err := s.AppendMessages(ctx, userMsg("q", 200), assistantMsg("a", 200)); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
	}
	ca, err := sa.Context(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cb, err := sb.Context(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ca.LeafID != cb.LeafID || len(ca.Messages) != len(cb.Messages) {
		t.Fatalf("hosts disagree: A leaf %s (%d messages), B leaf %s (%d)", ca.LeafID, len(ca.Messages), cb.LeafID, len(cb.Messages))
	}
	res, err := sa.Compact(ctx, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.After(20 * time.Second)
	got := make(chan client.Event, 16)
	go func() {
		for {
			ev, err := w.Next()
			if err != nil {
				close(got)
				return
			}
			got <- ev
		}
	}()
	for done := false; !done; {
		select {
		case ev, ok := <-got:
			if !ok {
				t.Fatal("host B's event stream ended")
			}
			if ev.Kind == "compaction_end" {
				if ev.EntryID != res.EntryID {
					t.Fatalf("host B saw compaction %s, host A saved %s", ev.EntryID, res.EntryID)
				}
				done = true
			}
		case <-deadline:
			t.Fatal("host A's compaction never reached host B's WatchEvents")
		}
	}
	cb, err = sb.Context(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(cb.Messages[0]), "compactionSummary") {
		t.Fatalf("host B's context does not start with A's summary: %.200s", cb.Messages[0])
	}
}

// TestStaleAppendIsAborted: an append racing another host's gets Aborted
// with the advice to read again, and nothing of it is written.
func TestStaleAppendIsAborted(t *testing.T) {
	url := pgtest.NewDatabase(t)
	cfg := testConfig(t.TempDir())
	a := startStoreHost(t, cfg, url)
	ctx := context.Background()
	sa, err := a.client.Create(ctx, "s.jsonl", "/w")
	if err != nil {
		t.Fatal(err)
	}
	// Another writer on the same database, outside any host.
	st, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := sa.AppendMessages(ctx, userMsg("one", 10)); err != nil {
		t.Fatal(err)
	}
	// The host reads before every call, so a plain race needs a writer
	// between its read and its write; the store's check is the one that
	// matters, shown here through the error mapping.
	f, err := st.Load(ctx, "s.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Append(ctx, "s.jsonl", "not-the-last", draftOf()); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("stale append: %v", err)
	}
	if _, err := st.Append(ctx, "s.jsonl", store.LastID(f), draftOf()); err != nil {
		t.Fatal(err)
	}
	// The host sees the outside append at its next call.
	c, err := sa.Context(ctx)
	if err != nil {
		t.Fatal(err)
	}
	f2, _ := st.Load(ctx, "s.jsonl")
	if c.LeafID != store.LastID(f2) {
		t.Fatalf("host's leaf %s, store's last %s", c.LeafID, store.LastID(f2))
	}
}

func draftOf() session.Draft {
	return session.Draft{Type: session.TypeCustom, Fields: map[string]any{"customType": "outside", "data": map[string]any{"n": 1}}}
}

// TestDatabaseRestartUnderServeLoad stops PostgreSQL while agents append
// through two hosts, then starts it again: every failed call is
// Unavailable (or a lost race: Aborted), an append whose answer was lost
// is found by reading the session before it is retried, nothing is
// half-written or doubled, and the load resumes on the same hosts with no
// restart of theirs.
func TestDatabaseRestartUnderServeLoad(t *testing.T) {
	url := pgtest.NewDatabase(t)
	cfg := testConfig(t.TempDir())
	cfg.Compaction.Enabled = false // every message stays in the context, where the agents look for theirs
	hosts := []*harness{startStoreHost(t, cfg, url), startStoreHost(t, cfg, url)}
	ctx := context.Background()
	const agents, turns = 4, 30
	type agent struct {
		s              *client.Session
		acked          []string
		unavailable    int
		foundAfterLoss int
	}
	as := make([]*agent, agents)
	for i := range as {
		s, err := hosts[i%2].client.Create(ctx, fmt.Sprintf("load/a%d.jsonl", i%2), "/w")
		if err != nil {
			t.Fatal(err)
		}
		as[i] = &agent{s: s}
	}
	var progress atomic.Int64
	// Agents hold at a quarter of the load until the database is down, so
	// that work is left for after the restart however fast the machine:
	// unheld, they could finish before the stop took effect, and the test
	// would see no progress to resume.
	const holdAt = agents * turns / 4
	stopped := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, agents)
	for i, a := range as {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; n < turns; {
				tag := fmt.Sprintf("agent%d-m%d", i, n)
				_, err := a.s.AppendMessages(ctx, userMsg(tag, 20))
				switch {
				case err == nil:
					a.acked = append(a.acked, tag)
					n++
					if progress.Add(1) >= holdAt {
						<-stopped
					}
					continue
				case errors.Is(err, client.ErrAborted):
					continue // another agent appended first
				case errors.Is(err, client.ErrUnavailable):
					a.unavailable++
				default:
					errs <- fmt.Errorf("agent %d: %w", i, err)
					return
				}
				// The answer was lost: read before retrying.
				for {
					time.Sleep(50 * time.Millisecond)
					c, err := a.s.Context(ctx)
					if errors.Is(err, client.ErrUnavailable) {
						a.unavailable++
						continue
					}
					if err != nil {
						errs <- fmt.Errorf("agent %d: read after a lost answer: %w", i, err)
						return
					}
					for _, m := range c.Messages {
						if strings.Contains(string(m), `"text":"`+tag+" ") {
							a.acked = append(a.acked, tag)
							a.foundAfterLoss++
							n++
							progress.Add(1)
							break
						}
					}
					break
				}
			}
		}()
	}
	waitProgress := func(n int64) {
		for limit := time.Now().Add(time.Minute); progress.Load() < n; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(limit) {
				t.Fatalf("the load made no progress (%d appends)", progress.Load())
			}
		}
	}
	waitProgress(holdAt)
	pgtest.Stop(t)
	stalled := progress.Load()
	close(stopped)
	time.Sleep(500 * time.Millisecond) // calls fail meanwhile
	pgtest.Restart(t)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if progress.Load() <= stalled {
		t.Fatal("the load did not resume after the restart")
	}
	st, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	unavailable, found := 0, 0
	for i, a := range as {
		unavailable += a.unavailable
		found += a.foundAfterLoss
		data, err := st.Export(ctx, fmt.Sprintf("load/a%d.jsonl", i%2))
		if err != nil {
			t.Fatal(err)
		}
		if len(data) > 0 && data[len(data)-1] != '\n' {
			t.Fatal("a half-written line")
		}
		for _, tag := range a.acked {
			if n := strings.Count(string(data), `"text":"`+tag+" "); n != 1 {
				t.Errorf("agent %d: %s stored %d times", i, tag, n)
			}
		}
	}
	if unavailable == 0 {
		t.Error("no call failed while the database was down")
	}
	t.Logf("%d calls failed Unavailable while the database was down, %d appends found stored after a lost answer", unavailable, found)
}

// TestSharedStoreTenantTokens: on a shared store a token's prefix holds
// as on files — by name, and by the id of a session another tenant
// opened on the same host.
func TestSharedStoreTenantTokens(t *testing.T) {
	url := pgtest.NewDatabase(t)
	cfg := testConfig(t.TempDir())
	cfg.Server.Tokens = []config.Token{
		{Name: "team-a", SHA256: HashToken("a-token"), Prefix: "team-a/"},
		{Name: "team-b", SHA256: HashToken("b-token"), Prefix: "team-b/"},
	}
	h := startStoreHost(t, cfg, url)
	ctx := context.Background()
	dial := func(tok string) *client.Client {
		c, err := client.Dial(h.addr, client.WithToken(tok))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	a, b := dial("a-token"), dial("b-token")
	sa, err := a.Create(ctx, "team-a/s.jsonl", "/w")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Create(ctx, "team-a/s.jsonl", "/w"); !errors.Is(err, client.ErrPermissionDenied) {
		t.Fatalf("team-b opening team-a's session: %v", err)
	}
	// A forged call naming team-a's session id with team-b's token.
	conn, err := grpc.NewClient(h.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	bctx := metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer b-token")
	if _, err := pb.NewSessionServiceClient(conn).GetContext(bctx, &pb.GetContextRequest{SessionId: sa.ID}); status.Code(err) != codes.PermissionDenied {
		t.Fatalf("team-b reading team-a's session by id: %v", err)
	}
	if _, err := b.Create(ctx, "../team-a/s.jsonl", "/w"); !errors.Is(err, client.ErrInvalidArgument) {
		t.Fatalf("a name leaving the prefix: %v", err)
	}
}

// TestWireEventFits: an engine event with huge free text, all of it
// escaped in JSON, still fits the store's payload limit, and the rest of
// the event survives the trip.
func TestWireEventFits(t *testing.T) {
	huge := strings.Repeat("\x01é\"", 20000)
	ev := engine.Event{Kind: engine.EventCompactionEnd, Time: time.Unix(0, 42), Error: huge, Continue: huge, Plugin: huge, EntryID: huge, TokensBefore: 7}
	got := relayed(t, ev)
	if got.Kind != ev.Kind || !got.Time.Equal(ev.Time) || got.TokensBefore != 7 || !strings.HasPrefix(huge, strings.TrimSuffix(got.Error, "…")) {
		t.Fatalf("round trip: %+v", got)
	}
}

// relayed is ev as another host reads it from the store, after checking
// its payload fits the store's limit.
func relayed(t *testing.T, ev engine.Event) engine.Event {
	t.Helper()
	b, err := wireOf("host/1", ev).encode()
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > store.MaxPayload {
		t.Fatalf("payload of %d bytes, over %d", len(b), store.MaxPayload)
	}
	var w wireEvent
	if err := json.Unmarshal(b, &w); err != nil {
		t.Fatal(err)
	}
	return w.event()
}

// TestWireEventProgressFits: a worker turn whose model called a
// thousand tools of absurd names still fits the payload limit, with its
// figures and a count of the names left out.
func TestWireEventProgressFits(t *testing.T) {
	tools := make([]string, 1000)
	for i := range tools {
		tools[i] = strings.Repeat("\"é", 500)
	}
	ev := engine.Event{Kind: engine.EventCompactionProgress, Time: time.Unix(0, 42),
		Progress: &explore.Progress{Turn: 3, MaxTurns: 20, Tools: tools, Tokens: 900, Max: 1000}}
	p := relayed(t, ev).Progress
	if p == nil || p.Turn != 3 || p.Tokens != 900 || len(p.Tools) != maxWireTools+1 || p.Tools[maxWireTools] != "… 968 more" {
		t.Fatalf("round trip: %+v", p)
	}
}

// TestCompactRefusedForTheLeaseStopsNoAgent: while another host holds the
// session's lease, a manual Compact is Aborted and the agent watching the
// session gets no agent_abort — its turn goes on. Once the lease is free,
// agent_abort comes first, then the compaction.
func TestCompactRefusedForTheLeaseStopsNoAgent(t *testing.T) {
	url := pgtest.NewDatabase(t)
	a := startStoreHost(t, testConfig(t.TempDir()), url)
	ctx := context.Background()
	const name = "team/lease.jsonl"
	sa, err := a.client.Create(ctx, name, "/work")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		if _, err := sa.AppendMessages(ctx, userMsg(fmt.Sprint("q", i), 200), assistantMsg(fmt.Sprint("a", i), 200)); err != nil {
			t.Fatal(err)
		}
	}
	w, err := sa.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	st, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()

	lease, err := st.AcquireLease(ctx, name, "other-host", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	before, err := st.Export(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sa.Compact(ctx, "", nil); !errors.Is(err, client.ErrAborted) || !strings.Contains(err.Error(), "another host") {
		t.Fatalf("Compact while another host holds the lease: %v, want Aborted", err)
	}
	if after, err := st.Export(ctx, name); err != nil || !bytes.Equal(after, before) {
		t.Fatalf("a refused compaction changed the session (%v)", err)
	}
	if err := st.ReleaseLease(ctx, lease); err != nil {
		t.Fatal(err)
	}
	res, err := sa.Compact(ctx, "", nil)
	if err != nil {
		t.Fatal(err)
	}

	// Events reach a watcher in order: whatever the refused compaction
	// sent would come before this one's.
	got := make(chan client.Event, 16)
	go func() {
		defer close(got)
		for {
			ev, err := w.Next()
			if err != nil {
				return
			}
			got <- ev
		}
	}()
	var kinds []string
	deadline := time.After(20 * time.Second)
	for len(kinds) == 0 || kinds[len(kinds)-1] != "compaction_end" {
		select {
		case ev, ok := <-got:
			if !ok {
				t.Fatalf("the event stream ended after %v", kinds)
			}
			if ev.Kind == "compaction_end" && ev.EntryID != res.EntryID {
				t.Fatalf("compaction_end of %s, the compaction saved %s", ev.EntryID, res.EntryID)
			}
			kinds = append(kinds, ev.Kind)
		case <-deadline:
			t.Fatalf("no compaction_end; events so far %v", kinds)
		}
	}
	if len(kinds) < 3 || kinds[0] != "agent_abort" || kinds[1] != "compaction_start" || slices.Index(kinds[1:], "agent_abort") >= 0 {
		t.Fatalf("events %v, want one agent_abort (the successful compaction's), then compaction_start … compaction_end", kinds)
	}
}
