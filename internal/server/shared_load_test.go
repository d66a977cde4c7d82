package server

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/internal/pgtest"
	"github.com/pith-dev/pith/store/postgres"
)

// TestSharedSessionsAcrossHosts is the operator's load of several hosts
// on one PostgreSQL: 400 clients, each opening (create: true) one of 50
// shared sessions through one of the hosts — the clients of a session
// spread over every host — and appending a user message and a turn's
// answer at once, retrying only the daemon's busy refusal (the client
// does). Every call succeeds, and every message is in the store exactly
// once: hosts that race on a session catch up and append at the new
// leaf, as one host does.
//
// It logs appends/s and the p99 of an append call (AppendMessages or
// AfterTurn); PITH_SHARED_HOSTS=n runs only n hosts, PITH_SHARED_TURNS
// the turns of each client (default 1), for the figures.
func TestSharedSessionsAcrossHosts(t *testing.T) {
	if testing.Short() {
		t.Skip("load test")
	}
	counts := []int{2, 3}
	if os.Getenv("PITH_SHARED_HOSTS") != "" {
		counts = []int{envInt(t, "PITH_SHARED_HOSTS", 2)}
	}
	for _, hosts := range counts {
		t.Run(fmt.Sprintf("hosts=%d", hosts), func(t *testing.T) {
			sharedLoad(t, hosts, 400, 50, envInt(t, "PITH_SHARED_TURNS", 1))
		})
	}
}

func sharedLoad(t *testing.T, nhosts, clients, sessions, turns int) {
	url := pgtest.NewDatabase(t)
	cfg := testConfig(t.TempDir())
	// Every client is the one anonymous caller: its bounds must not be
	// what is measured (a busy refusal would be retried anyway).
	cfg.Server.MaxCallsInFlight = 4 * clients
	cfg.Server.MaxOpenSessionsPerCaller = sessions
	var hosts []*harness
	for range nhosts {
		hosts = append(hosts, startStoreHost(t, cfg, url))
	}
	ctx := context.Background()
	type result struct {
		tags []string
		lat  []time.Duration
		errs []string
	}
	results := make([]result, clients)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := &results[i]
			name := fmt.Sprintf("shared/s%02d.jsonl", i%sessions)
			h := hosts[(i/sessions)%nhosts]
			<-start
			s, err := h.client.Create(ctx, name, "/w")
			if err != nil {
				r.errs = append(r.errs, "OpenSession: "+err.Error())
				return
			}
			for turn := range turns {
				tag := fmt.Sprintf("c%03d-t%02d", i, turn)
				t0 := time.Now()
				if _, err := s.AppendMessages(ctx, userMsg(tag+"-u", 40)); err != nil {
					r.errs = append(r.errs, "Append: "+err.Error())
					continue
				}
				r.lat = append(r.lat, time.Since(t0))
				r.tags = append(r.tags, tag+"-u")
				t0 = time.Now()
				if _, err := s.AfterTurn(ctx, assistantMsg(tag+"-a", 40)); err != nil {
					r.errs = append(r.errs, "AfterTurn: "+err.Error())
					continue
				}
				r.lat = append(r.lat, time.Since(t0))
				r.tags = append(r.tags, tag+"-a")
			}
		}()
	}
	began := time.Now()
	close(start)
	wg.Wait()
	elapsed := time.Since(began)
	for _, h := range hosts {
		h.stop()
	}

	var lat []time.Duration
	failed := map[string]int{}
	nfailed, acked := 0, 0
	for _, r := range results {
		lat = append(lat, r.lat...)
		acked += len(r.tags)
		for _, e := range r.errs {
			nfailed++
			failed[shortError(e)]++
		}
	}
	t.Logf("%d host(s), %d clients on %d sessions × %d turns: %d messages in %s (%.0f appends/s), append p50 %s p99 %s, %d calls failed",
		nhosts, clients, sessions, turns, acked, elapsed.Round(time.Millisecond), float64(acked)/elapsed.Seconds(), pct(lat, 50), pct(lat, 99), nfailed)
	if nfailed > 0 {
		var lines []string
		for e, n := range failed {
			lines = append(lines, fmt.Sprintf("%4d × %s", n, e))
		}
		sort.Strings(lines)
		t.Errorf("%d of %d calls failed:\n%s", nfailed, clients*(1+2*turns), strings.Join(lines, "\n"))
	}

	// Every acknowledged message is in the store once, and no other.
	st, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	seen := map[string]int{}
	for k := range sessions {
		name := fmt.Sprintf("shared/s%02d.jsonl", k)
		f, err := st.Load(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if len(f.Warnings) > 0 || f.TornTail {
			t.Fatalf("%s: warnings %v, torn tail %v", name, f.Warnings, f.TornTail)
		}
		roots := 0
		for _, e := range f.Entries {
			if e.ParentID == "" {
				roots++
			}
			if e.Type == session.TypeMessage {
				text := e.Get("message.content.0.text").Str
				if i := indexSpace(text); i > 0 {
					seen[text[:i]]++
				}
			}
		}
		if roots != 1 {
			t.Errorf("%s: %d roots, want one tree", name, roots)
		}
	}
	for _, r := range results {
		for _, tag := range r.tags {
			if seen[tag] != 1 {
				t.Errorf("message %s found %d times", tag, seen[tag])
			}
			delete(seen, tag)
		}
	}
	if nfailed == 0 && len(seen) > 0 {
		t.Errorf("%d messages stored that no call acknowledged", len(seen))
	}
}

// shortError is an error's kind for the failure summary: its text
// without the session's name.
func shortError(e string) string {
	if i := strings.Index(e, "shared/s"); i >= 0 {
		if j := strings.Index(e[i:], ": "); j >= 0 {
			return e[:i] + e[i+j+2:]
		}
	}
	return e
}

// TestCreateRaceAcrossHosts: many clients open the same new sessions with
// create: true through three hosts on one database (and through one host
// on files) at the same moment. Every call opens the session that won —
// one id per name — and exactly one of them is told it created it. On
// the old code the creating call was told it had not created the session
// when a concurrent call of its host had registered it first, so often
// none was.
func TestCreateRaceAcrossHosts(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.Server.MaxCallsInFlight = 256
	t.Run("postgres", func(t *testing.T) {
		url := pgtest.NewDatabase(t)
		var hosts []*harness
		for range 3 {
			hosts = append(hosts, startStoreHost(t, cfg, url))
		}
		createRace(t, hosts)
	})
	t.Run("files", func(t *testing.T) {
		createRace(t, []*harness{startServer(t, cfg)})
	})
}

func createRace(t *testing.T, hosts []*harness) {
	const names, per = 8, 24
	type opened struct {
		id      string
		created bool
		err     error
	}
	got := make([][]opened, names)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for n := range names {
		got[n] = make([]opened, per)
		for i := range per {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				s, err := hosts[i%len(hosts)].client.Create(context.Background(), fmt.Sprintf("race/r%d.jsonl", n), "/w")
				if err != nil {
					got[n][i] = opened{err: err}
					return
				}
				got[n][i] = opened{id: s.ID, created: s.Created}
			}()
		}
	}
	close(start)
	wg.Wait()
	for n, calls := range got {
		ids, created := map[string]bool{}, 0
		for _, o := range calls {
			if o.err != nil {
				t.Fatalf("race/r%d.jsonl: %v", n, o.err)
			}
			ids[o.id] = true
			if o.created {
				created++
			}
		}
		if len(ids) != 1 || created != 1 {
			t.Errorf("race/r%d.jsonl: %d session ids, %d calls told they created it; want 1 and 1", n, len(ids), created)
		}
	}
}
