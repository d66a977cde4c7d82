package explore

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/pith-dev/pith/core/compaction"
	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/core/summary"
	"github.com/pith-dev/pith/core/workspace"
	"github.com/pith-dev/pith/internal/sessiongen"
	"github.com/pith-dev/pith/summarize/llm"
)

// generated prepares a compaction of a generated session of n entries and
// returns the range, the retained tail and the preparation.
func generated(t testing.TB, seed uint64, n int) *compaction.Preparation {
	t.Helper()
	var buf bytes.Buffer
	opts := sessiongen.Defaults(seed, n)
	opts.Compaction = 0 // one long range, as a session never compacted
	if err := sessiongen.Generate(&buf, opts); err != nil {
		t.Fatal(err)
	}
	f, err := session.Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	tree := session.NewTree(f.Entries)
	prep, err := compaction.Prepare(tree.Path(tree.Last()), compaction.Settings{ReserveTokens: 16384, KeepRecentTokens: 2000, CutBeforeTrailingResults: true})
	if err != nil {
		t.Fatal(err)
	}
	return prep
}

func rangeMessages(p *compaction.Preparation) []session.Message {
	return append(append([]session.Message{}, p.MessagesToSummarize...), p.TurnPrefixMessages...)
}

// turn is one scripted answer of the model.
type turn struct {
	text  string
	calls []summary.ToolCall
	// promptTokens, when set, is the usage the server reports.
	promptTokens int
}

func call(name string, args string) summary.ToolCall {
	return summary.ToolCall{Name: name, Arguments: json.RawMessage(args)}
}

// modelServer is a loopback server speaking OpenAI chat completions with
// tool_calls, answering turn by turn from a script (the last turn repeats),
// and recording each request body.
type modelServer struct {
	mu     sync.Mutex
	script []turn
	bodies [][]byte
}

func newModel(t testing.TB, script ...turn) (summary.ToolCaller, *modelServer) {
	t.Helper()
	ms := &modelServer{script: script}
	srv := httptest.NewServer(http.HandlerFunc(ms.serve))
	t.Cleanup(srv.Close)
	s, err := llm.NewOpenAI(llm.OpenAIOptions{Model: "explorer", BaseURL: srv.URL + "/v1"})
	if err != nil {
		t.Fatal(err)
	}
	tc, err := summary.AsToolCaller(s)
	if err != nil {
		t.Fatal(err)
	}
	return tc, ms
}

func (ms *modelServer) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	ms.mu.Lock()
	n := len(ms.bodies)
	ms.bodies = append(ms.bodies, body)
	t := ms.script[min(n, len(ms.script)-1)]
	ms.mu.Unlock()
	type fn struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	type tc struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function fn     `json:"function"`
	}
	calls := []tc{}
	for i, c := range t.calls {
		calls = append(calls, tc{ID: fmt.Sprintf("call_%d_%d", n, i), Type: "function", Function: fn{c.Name, string(c.Arguments)}})
	}
	finish := "stop"
	if len(calls) > 0 {
		finish = "tool_calls"
	}
	msg := map[string]any{"role": "assistant", "content": t.text}
	if len(calls) > 0 {
		msg["tool_calls"] = calls
	}
	prompt := t.promptTokens
	if prompt == 0 {
		prompt = len(body) / 8 // a plausible count below the chars/4 estimate
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"id": "c", "object": "chat.completion", "model": "explorer",
		"choices": []any{map[string]any{"index": 0, "finish_reason": finish, "message": msg}},
		"usage":   map[string]any{"prompt_tokens": prompt, "completion_tokens": 10, "total_tokens": prompt + 10},
	})
}

// requests returns the recorded request bodies' messages.
func (ms *modelServer) requests(t testing.TB) [][]map[string]any {
	t.Helper()
	ms.mu.Lock()
	defer ms.mu.Unlock()
	var out [][]map[string]any
	for _, b := range ms.bodies {
		var body struct {
			Messages []map[string]any `json:"messages"`
		}
		if err := json.Unmarshal(b, &body); err != nil {
			t.Fatal(err)
		}
		out = append(out, body.Messages)
	}
	return out
}

func newWorkspace(t testing.TB, files map[string]string) *workspace.Workspace {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ws, err := workspace.Open(dir, workspace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	return ws
}

// msg builds a session message with the given role and raw JSON.
func msg(id, raw string) session.Message {
	var r struct {
		Role string `json:"role"`
	}
	json.Unmarshal([]byte(raw), &r)
	return session.Message{Role: r.Role, Raw: json.RawMessage(raw), EntryID: id}
}
