package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/core/summary"
	"github.com/pith-dev/pith/store/files"
	"github.com/pith-dev/pith/summarize/builtin"
)

// offline is the summarizer the CLI and the daemon pass when none is
// configured: the engine has no default of its own.
func offline() summary.Summarizer { return builtin.New(builtin.Options{}) }

// testSettings: threshold 8 000 tokens, a small kept tail, no calibration,
// so that a few short turns give a compaction with something to summarize.
func testSettings() Settings {
	return Settings{
		Enabled:          true,
		ReserveTokens:    2000,
		KeepRecentTokens: 300,
		AutoContinue:     true,
		ContextWindow:    10000,
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func userMsg(text string) json.RawMessage {
	return json.RawMessage(`{"role":"user","content":` + jsonString(text) + `}`)
}

// assistantMsg is a finished assistant turn whose usage says the context
// is input+output tokens.
func assistantMsg(text string, input, output int) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"role":"assistant","content":[{"type":"text","text":%s}],"provider":"test","model":"m1",`+
		`"usage":{"input":%d,"output":%d,"cacheRead":0,"cacheWrite":0,"totalTokens":%d},"stopReason":"stop"}`,
		jsonString(text), input, output, input+output))
}

func errorMsg(text string) json.RawMessage {
	return json.RawMessage(`{"role":"assistant","content":[],"provider":"test","model":"m1",` +
		`"usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0},"stopReason":"error","errorMessage":` + jsonString(text) + `}`)
}

const overflowText = "prompt is too long: 213462 tokens > 200000 maximum"

// prose gives n characters of text (n/4 tokens by estimate).
func prose(i, n int) string {
	s := strings.Repeat(fmt.Sprintf("turn %d works on internal/pkg/file%d.go. ", i, i), n/40+1)
	return s[:n]
}

// newSession creates a session file with turns user/assistant pairs of
// about 250 estimated tokens each, all with small usage.
func newSession(t testing.TB, turns int) (*files.Session, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s.jsonl")
	st, err := files.Create(path, "/repo", files.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	for i := 0; i < turns; i++ {
		for _, m := range []json.RawMessage{userMsg(prose(i, 400)), assistantMsg(prose(i, 600), 1000+i*10, 50)} {
			if _, err := st.Append(session.Draft{Type: session.TypeMessage, Fields: json.RawMessage(`{"message":` + string(m) + `}`)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	return st, path
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func compactions(t testing.TB, path string) []*session.Entry {
	t.Helper()
	f, err := session.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []*session.Entry
	for _, e := range f.Entries {
		if e.Type == session.TypeCompaction {
			out = append(out, e)
		}
	}
	return out
}

// answer is one scripted summarizer reply.
type answer struct {
	text   string
	finish summary.FinishReason
	err    error
	// block waits for ctx to end (and reports that it started on started).
	block bool
	// hold waits for release before answering.
	hold chan struct{}
}

// script is a summarizer that replies from a queue, then with a default
// valid summary.
type script struct {
	mu      sync.Mutex
	queue   []answer
	calls   int
	reqs    []summary.Request
	started chan struct{}
}

func newScript(answers ...answer) *script {
	return &script{queue: answers, started: make(chan struct{}, 16)}
}

func (s *script) Summarize(ctx context.Context, req summary.Request) (summary.Result, error) {
	s.mu.Lock()
	s.calls++
	s.reqs = append(s.reqs, req)
	a := answer{text: "## Goal\nKeep going.\n\n## Next Steps\n1. Finish."}
	if len(s.queue) > 0 {
		a = s.queue[0]
		s.queue = s.queue[1:]
	}
	s.mu.Unlock()
	if a.block || a.hold != nil {
		s.started <- struct{}{}
	}
	if a.block {
		<-ctx.Done()
		return summary.Result{}, ctx.Err()
	}
	if a.hold != nil {
		select {
		case <-a.hold:
		case <-ctx.Done():
			return summary.Result{}, ctx.Err()
		}
	}
	if a.err != nil {
		return summary.Result{}, a.err
	}
	if a.finish == "" {
		a.finish = summary.FinishStop
	}
	return summary.Result{Text: a.text, FinishReason: a.finish, Model: "script"}, nil
}

func (s *script) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// recorder collects events.
type recorder struct {
	mu  sync.Mutex
	evs []Event
}

func record(s *Session) *recorder {
	r := &recorder{}
	s.Subscribe(func(ev Event) {
		r.mu.Lock()
		r.evs = append(r.evs, ev)
		r.mu.Unlock()
	})
	return r
}

func (r *recorder) kinds() []EventKind {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]EventKind, len(r.evs))
	for i, ev := range r.evs {
		out[i] = ev.Kind
	}
	return out
}

func (r *recorder) last(kind EventKind) (Event, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.evs) - 1; i >= 0; i-- {
		if r.evs[i].Kind == kind {
			return r.evs[i], true
		}
	}
	return Event{}, false
}

func liveHas(s *Session, entryID string) bool {
	for _, m := range s.Messages() {
		if m.EntryID == entryID {
			return true
		}
	}
	return false
}

var errBoom = errors.New("boom")

// newTurn appends a user message of ~350 estimated tokens, so that the
// next compaction cuts cleanly at it (no split turn: one summarizer call).
func newTurn(t testing.TB, s *Session) {
	t.Helper()
	if _, err := s.AppendMessages(context.Background(), userMsg(prose(77, 1400))); err != nil {
		t.Fatal(err)
	}
}
