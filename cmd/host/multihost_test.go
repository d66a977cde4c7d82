package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/pith-dev/pith/client"
	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/internal/pgtest"
	"github.com/pith-dev/pith/store/postgres"
)

// A real OpenAI-compatible model on loopback for the hosts' summaries;
// armed, it holds the next request until the test ends, so a host can be
// killed in the middle of a compaction.
type loopbackModel struct {
	srv     *httptest.Server
	armed   atomic.Bool
	holding chan struct{} // closed when an armed request arrived
	release chan struct{}
	calls   atomic.Int64
}

func newLoopbackModel(t *testing.T) *loopbackModel {
	m := &loopbackModel{holding: make(chan struct{}), release: make(chan struct{})}
	var once sync.Once
	m.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		m.calls.Add(1)
		if m.armed.CompareAndSwap(true, false) {
			once.Do(func() { close(m.holding) })
			select {
			case <-m.release:
			case <-r.Context().Done():
			}
			return
		}
		n := m.calls.Load()
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"id": fmt.Sprintf("chatcmpl-%d", n), "object": "chat.completion", "created": 1, "model": gjson.GetBytes(body, "model").String(),
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": fmt.Sprintf("## Goal\nKeep going.\n\n## Progress\nSummary %d of the loopback model.", n)}}},
			"usage": map[string]any{"prompt_tokens": 900, "completion_tokens": 40, "total_tokens": 940},
		})
	}))
	t.Cleanup(func() { close(m.release); m.srv.Close() })
	return m
}

// writeMultiHostConfig is the one configuration file of every host: the
// shared database, a short lease and a small window, so that a few turns
// cross the compaction threshold.
func writeMultiHostConfig(t *testing.T, dir, url, model string, lease time.Duration) string {
	cfg := map[string]any{
		"contextWindow": 6000,
		"compaction":    map[string]any{"reserveTokens": 2000, "keepRecentTokens": 800},
		"summarizer":    map[string]any{"provider": "openai", "model": "loopback", "baseUrl": model + "/v1", "apiKeyEnv": "PITH_TEST_MODEL_KEY"},
		"retry":         map[string]any{"maxRetries": 0},
		"sessions":      map[string]any{"root": "sessions", "store": url, "leaseTTL": lease.String()},
		"server":        map[string]any{"shutdownTimeout": "5s"},
	}
	data, _ := json.Marshal(cfg)
	path := filepath.Join(dir, "pith.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// turnWriter drives one agent on one session through one host: a user
// message, then AfterTurn with the answer, every message tagged so the
// test can count it in the store afterwards.
type turnWriter struct {
	name string
	s    *client.Session
	// acked are the tags the host confirmed; maybe those whose call
	// failed without an answer (the host died, the store was down).
	acked, maybe []string
	compactions  []string // entry ids of the threshold compactions it got
	skipped      int      // threshold compactions skipped: another host held the lease
	failures     []string // failed automatic compactions (the message was appended)
}

// turn fails on any error: nobody navigates or prunes here, so a host
// that lost a race with another host's append catches up and appends
// after it — an Aborted is a failed call (it was retried up to 50 times
// before hosts did that themselves).
func (w *turnWriter) turn(ctx context.Context, tag string) error {
	if _, err := w.s.AppendMessages(ctx, serveMessage("user", tag+"-u", 120)); err != nil {
		if !errors.Is(err, client.ErrAborted) {
			w.maybe = append(w.maybe, tag+"-u")
		}
		return err
	}
	w.acked = append(w.acked, tag+"-u")
	out, err := w.s.AfterTurn(ctx, serveMessage("assistant", tag+"-a", 120))
	if err != nil {
		if !errors.Is(err, client.ErrAborted) {
			w.maybe = append(w.maybe, tag+"-a")
		}
		return err
	}
	w.acked = append(w.acked, tag+"-a")
	if out.Compaction != nil {
		w.compactions = append(w.compactions, out.Compaction.EntryID)
	}
	if out.Skipped != "" {
		w.skipped++
	}
	if out.Err != "" {
		w.failures = append(w.failures, out.Err)
	}
	return nil
}

// eventLog collects the compaction_end events one host's WatchEvents
// stream delivers for one session.
type eventLog struct {
	mu    sync.Mutex
	saved map[string]bool // entry ids of saved compactions
	kinds map[string]int
}

func watchEvents(t *testing.T, ctx context.Context, s *client.Session) *eventLog {
	w, err := s.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	l := &eventLog{saved: map[string]bool{}, kinds: map[string]int{}}
	go func() {
		defer w.Close()
		for {
			ev, err := w.Next()
			if err != nil {
				return
			}
			l.mu.Lock()
			l.kinds[ev.Kind]++
			if ev.Kind == "compaction_end" && ev.EntryID != "" {
				l.saved[ev.EntryID] = true
			}
			l.mu.Unlock()
		}
	}()
	return l
}

func (l *eventLog) has(id string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.saved[id]
}

// TestMultiHostOnPostgreSQL: three `pith serve` processes on one database.
// Agents append through all three, to a session they share and to one
// each; threshold compactions fire; one host is killed (SIGKILL) in the
// middle of a compaction and restarted. Afterwards: no acknowledged entry
// lost, none written twice, one compaction per trigger, the dead host's
// lease taken over once it expired, every saved compaction seen on every
// host's WatchEvents, and every session, exported to a file, has the
// context pi 0.73.1 computes for that file.
func TestMultiHostOnPostgreSQL(t *testing.T) {
	url := pgtest.NewDatabase(t)
	model := newLoopbackModel(t)
	t.Setenv("PITH_TEST_MODEL_KEY", "sk-test-not-a-real-key")
	const lease = 2 * time.Second
	dir := t.TempDir()
	cfgPath := writeMultiHostConfig(t, dir, url, model.srv.URL, lease)
	hosts := make([]*serveProc, 3)
	clients := make([]*client.Client, 3)
	for i := range hosts {
		hosts[i] = startServe(t, cfgPath)
		c, err := client.Dial(hosts[i].addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		clients[i] = c
	}
	ctx := context.Background()
	const shared = "team/shared.jsonl"
	open := func(h int, name string) *client.Session {
		s, err := clients[h].Create(ctx, name, "/work")
		if err != nil {
			t.Fatalf("host %d: open %s: %v", h, name, err)
		}
		return s
	}
	// Every host watches the shared session from the start.
	var logs []*eventLog
	for h := range hosts {
		logs = append(logs, watchEvents(t, ctx, open(h, shared)))
	}

	// Phase 1: six agents at once — two per host on the shared session,
	// one per host on a session of its own.
	turns := 14
	if os.Getenv("PITH_HEAVY") != "" {
		turns = 60
	}
	var writers []*turnWriter
	for h := range hosts {
		writers = append(writers,
			&turnWriter{name: fmt.Sprintf("h%d-shared-a", h), s: open(h, shared)},
			&turnWriter{name: fmt.Sprintf("h%d-shared-b", h), s: open(h, shared)},
			&turnWriter{name: fmt.Sprintf("h%d-own", h), s: open(h, fmt.Sprintf("team/own-%d.jsonl", h))})
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(writers))
	for _, w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range turns {
				if err := w.turn(ctx, fmt.Sprintf("%s-t%d", w.name, i)); err != nil {
					errs <- fmt.Errorf("%s turn %d: %w", w.name, i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	// Every compaction so far reaches every host's watchers.
	st, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	phase1 := compactionIDs(t, st, shared)
	waitFor(t, "every host to see every compaction of phase 1", func() string {
		for i, l := range logs {
			for _, id := range phase1 {
				if !l.has(id) {
					return fmt.Sprintf("watcher %d lacks compaction %s", i, id)
				}
			}
		}
		return ""
	})

	// Phase 2: host 0 compacts the shared session and is killed while
	// its summary request hangs; host 1 takes the session over once the
	// dead host's lease expired.
	victim := &turnWriter{name: "victim", s: open(0, shared)}
	model.armed.Store(true)
	victimDone := make(chan error, 1)
	go func() {
		for i := 0; ; i++ {
			if err := victim.turn(ctx, fmt.Sprintf("victim-t%d", i)); err != nil {
				victimDone <- err
				return
			}
			select {
			case <-model.holding:
				victimDone <- nil
				return
			default:
			}
		}
	}()
	select {
	case <-model.holding:
	case err := <-victimDone:
		t.Fatalf("host 0 never started a compaction: %v", err)
	case <-time.After(2 * time.Minute):
		t.Fatal("host 0 never started a compaction")
	}
	killed := time.Now()
	if err := hosts[0].cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-hosts[0].done
	<-victimDone
	survivor := open(1, shared)
	var takeover time.Duration
	var takenBy string
	refused := 0
	for {
		res, err := survivor.Compact(ctx, "", nil)
		if err == nil {
			takeover, takenBy = time.Since(killed), res.EntryID
			break
		}
		if !errors.Is(err, client.ErrAborted) {
			t.Fatalf("compaction on host 1 after host 0 died: %v", err)
		}
		refused++
		if time.Since(killed) > time.Minute {
			t.Fatal("host 1 never took over the dead host's lease")
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("lease taken over %v after the kill (TTL %v), %d attempts refused meanwhile", takeover.Round(time.Millisecond), lease, refused)
	if refused == 0 {
		t.Error("host 1 compacted at once: the dead host held no lease")
	}

	// Phase 3: host 0 comes back and serves the session as the others see
	// it.
	hosts[0] = startServe(t, cfgPath)
	c0, err := client.Dial(hosts[0].addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c0.Close()
	clients[0] = c0
	back := &turnWriter{name: "back", s: open(0, shared)}
	logs = append(logs, watchEvents(t, ctx, back.s))
	for i := range 3 {
		if err := back.turn(ctx, fmt.Sprintf("back-t%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	writers = append(writers, victim, back)

	// Every saved compaction reaches every host's watchers (the events of
	// the restarted host's stream from its start on).
	names, err := st.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	compactions := map[string][]string{} // session → compaction entry ids
	for _, name := range names {
		f, err := st.Load(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		checkEntries(t, name, f, writers)
		firstKept := map[string]string{}
		for _, e := range f.Entries {
			if e.Type != session.TypeCompaction {
				continue
			}
			compactions[name] = append(compactions[name], e.ID)
			fk := gjson.GetBytes(e.Raw, "firstKeptEntryId").String()
			if other, dup := firstKept[fk]; dup {
				t.Errorf("%s: compactions %s and %s both keep from %s: one trigger compacted twice", name, other, e.ID, fk)
			}
			firstKept[fk] = e.ID
		}
	}
	reported := map[string]bool{takenBy: true}
	for _, w := range writers {
		for _, id := range w.compactions {
			if reported[id] {
				t.Errorf("compaction %s reported twice", id)
			}
			reported[id] = true
		}
	}
	stored := 0
	for name, ids := range compactions {
		for _, id := range ids {
			stored++
			if !reported[id] {
				t.Errorf("%s: compaction %s is in the store but no call reported it", name, id)
			}
		}
	}
	if stored != len(reported) {
		t.Errorf("%d compactions stored, %d reported", stored, len(reported))
	}
	if len(compactions[shared]) < 2 {
		t.Errorf("the shared session has %d compactions; the load should have crossed the threshold", len(compactions[shared]))
	}
	// The later ones too: host 0's second stream sees those after its
	// restart.
	var after []string
	for _, id := range compactions[shared] {
		if id == takenBy || len(after) > 0 {
			after = append(after, id)
		}
	}
	expect := [][]string{phase1, compactions[shared], compactions[shared], after[1:]}
	waitFor(t, "every host to see every compaction of the shared session", func() string {
		for i, l := range logs {
			for _, id := range expect[i] {
				if !l.has(id) {
					return fmt.Sprintf("watcher %d lacks compaction %s", i, id)
				}
			}
		}
		return ""
	})
	skipped := 0
	for _, w := range writers {
		skipped += w.skipped
		for _, f := range w.failures {
			if strings.Contains(f, "nothing to compact: already compacted") {
				// Known, in the engine: a threshold compaction that got
				// the lease just after another host compacted finds the
				// leaf compacted and counts that as a failure.
				t.Logf("%s: %s (another host's compaction came first)", w.name, f)
				continue
			}
			t.Errorf("%s: automatic compaction failed: %s", w.name, f)
		}
	}
	t.Logf("%d sessions, %d compactions (%d of the shared session), %d threshold compactions skipped for another host's lease",
		len(names), stored, len(compactions[shared]), skipped)

	// Every session, exported, is what pi reads.
	var files []string
	for _, name := range names {
		out := filepath.Join(dir, strings.ReplaceAll(name, "/", "_"))
		if _, stderr, code := runCLI(t, "export", "--store", url, name, "--out", out); code != 0 {
			t.Fatalf("export %s: %s", name, stderr)
		}
		files = append(files, out)
	}
	compareContexts(t, url, names, files)
}

// checkEntries: the session is one tree (unique ids, every parent
// present) holding every acknowledged message exactly once and every
// unacknowledged one at most once.
func checkEntries(t *testing.T, name string, f *session.File, writers []*turnWriter) {
	t.Helper()
	ids := map[string]bool{}
	count := map[string]int{}
	for _, e := range f.Entries {
		if ids[e.ID] {
			t.Errorf("%s: entry id %s twice", name, e.ID)
		}
		ids[e.ID] = true
		if e.ParentID != "" && !ids[e.ParentID] {
			t.Errorf("%s: entry %s's parent %s is not before it", name, e.ID, e.ParentID)
		}
		if e.Type == session.TypeMessage {
			text := gjson.GetBytes(e.Raw, "message.content.0.text").String()
			tag, _, _ := strings.Cut(text, " ")
			count[tag]++
		}
	}
	for _, w := range writers {
		if w.s.Path != name {
			continue
		}
		for _, tag := range w.acked {
			if count[tag] != 1 {
				t.Errorf("%s: acknowledged message %s is there %d times", name, tag, count[tag])
			}
		}
	}
	for tag, n := range count {
		if n > 1 {
			t.Errorf("%s: message %s written %d times", name, tag, n)
		}
	}
}

// compareContexts checks each exported file: `pith context` of the file
// equals `pith context --store` of the stored session, and equals pi
// 0.73.1's context of the file (conformance/node_modules); without node or
// the pinned package that last comparison is skipped, saying so.
func compareContexts(t *testing.T, url string, names, files []string) {
	t.Helper()
	pith := make([]contextJSON, len(files))
	for i, file := range files {
		for j, args := range [][]string{{"context", "--json", file}, {"context", "--json", "--store", url, names[i]}} {
			stdout, stderr, code := runCLI(t, args...)
			if code != 0 {
				t.Fatalf("pith %s: %s", strings.Join(args, " "), stderr)
			}
			var got contextJSON
			if err := json.Unmarshal([]byte(stdout), &got); err != nil {
				t.Fatal(err)
			}
			if j == 0 {
				pith[i] = got
			} else if got.LeafID != pith[i].LeafID || strings.Join(got.Roles, ",") != strings.Join(pith[i].Roles, ",") || got.Tokens != pith[i].Tokens {
				t.Errorf("%s: the exported file's context differs from the stored session's", names[i])
			}
		}
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Log("node not found: the exported sessions' context is compared with the stored sessions', not with pi's")
		return
	}
	if _, err := os.Stat(filepath.Join("..", "..", "conformance", "node_modules", "@mariozechner", "pi-coding-agent")); err != nil {
		t.Log("pi is not installed (cd conformance && npm ci): the exported sessions' context is compared with the stored sessions', not with pi's")
		return
	}
	cmd := exec.Command(node, append([]string{filepath.Join("testdata", "pi-context.mjs")}, files...)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("pi-context.mjs: %v", err)
	}
	var pis []struct {
		File   string   `json:"file"`
		LeafID string   `json:"leafId"`
		Roles  []string `json:"roles"`
		Tokens int      `json:"tokens"`
	}
	if err := json.Unmarshal(out, &pis); err != nil || len(pis) != len(files) {
		t.Fatalf("pi-context.mjs output (%v): %.300s", err, out)
	}
	for i, pi := range pis {
		got := pith[i]
		if got.LeafID != pi.LeafID || strings.Join(got.Roles, ",") != strings.Join(pi.Roles, ",") || got.Tokens != pi.Tokens {
			t.Errorf("%s: pith's context (leaf %s, %d messages, %d tokens) differs from pi's (leaf %s, %d messages, %d tokens)",
				filepath.Base(pi.File), got.LeafID, len(got.Roles), got.Tokens, pi.LeafID, len(pi.Roles), pi.Tokens)
		}
	}
	t.Logf("%d exported sessions: pith's context equals pi 0.73.1's", len(pis))
}

// compactionIDs lists the compaction entries of a stored session.
func compactionIDs(t *testing.T, st *postgres.Store, name string) []string {
	t.Helper()
	f, err := st.Load(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range f.Entries {
		if e.Type == session.TypeCompaction {
			ids = append(ids, e.ID)
		}
	}
	return ids
}

// waitFor polls missing until it says nothing is; the limit only keeps a
// broken run from hanging.
func waitFor(t *testing.T, what string, missing func() string) {
	t.Helper()
	for limit := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		m := missing()
		if m == "" {
			return
		}
		if time.Now().After(limit) {
			t.Fatalf("timed out waiting for %s: %s", what, m)
		}
	}
}
