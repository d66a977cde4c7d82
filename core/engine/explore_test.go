package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/pith-dev/pith/core/explore"
	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/core/summary"
	"github.com/pith-dev/pith/hooks"
	"github.com/pith-dev/pith/internal/dispatch"
	"github.com/pith-dev/pith/store/files"
	"github.com/pith-dev/pith/summarize/llm"
)

// workerModel is a loopback server speaking OpenAI chat completions with
// tool_calls; each request gets the next scripted list of calls (name,
// arguments), the last one repeating.
type workerModel struct {
	mu     sync.Mutex
	script [][][2]string
	bodies []string
}

func startWorkerModel(t *testing.T, script ...[][2]string) (*workerModel, summary.ToolCaller) {
	t.Helper()
	wm := &workerModel{script: script}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		wm.mu.Lock()
		n := len(wm.bodies)
		wm.bodies = append(wm.bodies, string(body))
		turn := wm.script[min(n, len(wm.script)-1)]
		wm.mu.Unlock()
		var calls []any
		for i, c := range turn {
			calls = append(calls, map[string]any{"id": fmt.Sprintf("c%d_%d", n, i), "type": "function", "function": map[string]any{"name": c[0], "arguments": c[1]}})
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"id": "x", "object": "chat.completion", "model": "worker",
			"choices": []any{map[string]any{"index": 0, "finish_reason": "tool_calls", "message": map[string]any{"role": "assistant", "content": nil, "tool_calls": calls}}},
			"usage":   map[string]any{"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}})
	}))
	t.Cleanup(srv.Close)
	s, err := llm.NewOpenAI(llm.OpenAIOptions{Model: "worker", BaseURL: srv.URL + "/v1"})
	if err != nil {
		t.Fatal(err)
	}
	tc, err := summary.AsToolCaller(s)
	if err != nil {
		t.Fatal(err)
	}
	return wm, tc
}

func (wm *workerModel) requests() []string {
	wm.mu.Lock()
	defer wm.mu.Unlock()
	return append([]string(nil), wm.bodies...)
}

// exploreStore is newSession with the header's cwd a real workspace.
func exploreStore(t *testing.T, turns int) (*files.Session, string) {
	t.Helper()
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "notes.md"), []byte("# Notes\nkeep tabs\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "s.jsonl")
	st, err := files.Create(path, ws, files.Options{})
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

func exploreSettings() Settings {
	st := testSettings()
	st.Explore = ExploreSettings{Enabled: true, RetainedTokens: 300, Budgets: explore.DefaultBudgets()}
	return st
}

// TestExploreAutomaticWithHooks: a threshold compaction runs the explore
// strategy as a manual one would: session.compacting's lines and prompt
// reach the worker, session_compact reports the compaction entry, the
// auto-read entry follows it, the live context has both, and the worker's
// turns are events.
func TestExploreAutomaticWithHooks(t *testing.T) {
	store, path := exploreStore(t, 12)
	wm, model := startWorkerModel(t,
		[][2]string{{"read_session_items", `{"from":1,"to":3}`}},
		[][2]string{{"mark_read_required", `{"path":"notes.md"}`}, {"write_summary", `{"text":"## Goal\nKeep going."}`}},
	)
	var notified *hooks.CompactEvent
	plugin := dispatch.NewPlugin(hooks.PluginInfo{Name: "observer"}, hooks.Funcs{
		OnCompacting: func(ctx context.Context, ev *hooks.CompactingEvent) (*hooks.CompactingResult, error) {
			return &hooks.CompactingResult{Context: []string{"the user prefers tabs"}, Prompt: "Summarize tersely."}, nil
		},
		OnCompact: func(ctx context.Context, ev *hooks.CompactEvent) error {
			notified = ev
			return nil
		},
	})
	d, err := dispatch.NewDispatcher(dispatch.Options{}, plugin)
	if err != nil {
		t.Fatal(err)
	}
	st := exploreSettings()
	st.Explore.Budgets.OverviewTarget, st.Explore.Budgets.OverviewWarning = 50, 100 // the overview will pass it
	s := New(store, Options{Summarizer: offline(), Settings: st, Explorer: model, Hooks: d})
	rec := record(s)
	newTurn(t, s)
	out, err := s.AfterTurn(context.Background(), assistantMsg("above", 9000, 100))
	if err != nil || out.Compaction == nil {
		t.Fatalf("%+v %v", out, err)
	}
	res := out.Compaction
	if res.Strategy != StrategyExplore || res.Explore == nil || res.Explore.Turns != 2 || res.AutoReadEntry == nil {
		t.Fatalf("result %+v", res)
	}
	first := wm.requests()[0]
	if !strings.Contains(first, "- the user prefers tabs") || !strings.Contains(first, "Summarize tersely.") {
		t.Errorf("hook context missing from the worker's instructions: %.400s", first)
	}
	if notified == nil || string(notified.CompactionEntry) != string(res.Entry.Raw) {
		t.Errorf("session_compact = %+v", notified)
	}
	if !liveHas(s, res.AutoReadEntry.ID) || !strings.Contains(string(res.AutoReadEntry.Raw), "keep tabs") {
		t.Errorf("auto-read entry not in the live context: %s", res.AutoReadEntry.Raw)
	}
	if c := compactions(t, path)[0]; c.Get("details.strategy").String() != "explore" || c.Get("details.turns").Int() != 2 {
		t.Errorf("details = %s", c.Get("details").Raw)
	}
	if ev, ok := rec.last(EventCompactionWarning); !ok || !strings.Contains(ev.Error, "overviewWarningTokens 100") {
		t.Errorf("no overview warning event: %+v", ev)
	}
	progress := 0
	for _, k := range rec.kinds() {
		if k == EventCompactionProgress {
			progress++
		}
	}
	if progress != 2 {
		t.Errorf("events = %v", rec.kinds())
	}
}

// TestExploreCancelledByHook: session_before_compact cancels before the
// worker makes a single request.
func TestExploreCancelledByHook(t *testing.T) {
	store, path := exploreStore(t, 12)
	wm, model := startWorkerModel(t, [][2]string{{"write_summary", `{"text":"x"}`}})
	plugin := dispatch.NewPlugin(hooks.PluginInfo{Name: "guard"}, hooks.Funcs{
		OnBeforeCompact: func(ctx context.Context, ev *hooks.BeforeCompactEvent) (*hooks.BeforeCompactResult, error) {
			return &hooks.BeforeCompactResult{Cancel: true, CancelReason: "not now"}, nil
		},
	})
	d, _ := dispatch.NewDispatcher(dispatch.Options{}, plugin)
	s := New(store, Options{Summarizer: offline(), Settings: exploreSettings(), Explorer: model, Hooks: d})
	before := readFile(t, path)
	_, err := s.Compact(context.Background(), "")
	if !errors.Is(err, ErrCancelled) || len(wm.requests()) != 0 || string(readFile(t, path)) != string(before) {
		t.Errorf("err %v, %d worker requests", err, len(wm.requests()))
	}
}

// TestExploreWithoutToolModel: the built-in summarizer is refused with a
// clear error; nothing falls back to the ordinary strategy.
func TestExploreWithoutToolModel(t *testing.T) {
	store, path := exploreStore(t, 12)
	s := New(store, Options{Summarizer: offline(), Settings: exploreSettings()})
	before := readFile(t, path)
	_, err := s.Compact(context.Background(), "")
	if !errors.Is(err, ErrNoToolModel) || string(readFile(t, path)) != string(before) {
		t.Errorf("err = %v", err)
	}
}
