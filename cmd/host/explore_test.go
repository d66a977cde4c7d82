package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/pith-dev/pith/client"
)

// workerTurn is one scripted answer of the exploring worker's model: the
// tool calls it makes (name and JSON arguments), and the prompt tokens the
// server reports (0: a plausible figure).
type workerTurn struct {
	calls        [][2]string
	promptTokens int
}

// workerServer is a loopback model server speaking OpenAI chat completions
// with tool_calls, or Anthropic messages with tool_use, answering from a
// script turn by turn (the last turn repeats).
type workerServer struct {
	wire   string
	script []workerTurn
	mu     sync.Mutex
	bodies []string
}

func startWorkerServer(t *testing.T, wire string, script ...workerTurn) (*workerServer, string) {
	t.Helper()
	ws := &workerServer{wire: wire, script: script}
	srv := httptest.NewServer(ws)
	t.Cleanup(srv.Close)
	if wire == "openai" {
		return ws, srv.URL + "/v1"
	}
	return ws, srv.URL
}

func (ws *workerServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	ws.mu.Lock()
	n := len(ws.bodies)
	ws.bodies = append(ws.bodies, string(body))
	turn := ws.script[min(n, len(ws.script)-1)]
	ws.mu.Unlock()
	prompt := turn.promptTokens
	if prompt == 0 {
		prompt = len(body) / 8
	}
	w.Header().Set("Content-Type", "application/json")
	switch {
	case ws.wire == "openai" && r.URL.Path == "/v1/chat/completions":
		var calls []any
		for i, c := range turn.calls {
			calls = append(calls, map[string]any{"id": fmt.Sprintf("call_%d_%d", n, i), "type": "function",
				"function": map[string]any{"name": c[0], "arguments": c[1]}})
		}
		msg := map[string]any{"role": "assistant", "content": nil}
		finish := "stop"
		if len(calls) > 0 {
			msg["tool_calls"], finish = calls, "tool_calls"
		} else {
			msg["content"] = "I have nothing to add."
		}
		json.NewEncoder(w).Encode(map[string]any{"id": "c", "object": "chat.completion", "model": "worker-model",
			"choices": []any{map[string]any{"index": 0, "finish_reason": finish, "message": msg}},
			"usage":   map[string]any{"prompt_tokens": prompt, "completion_tokens": 20, "total_tokens": prompt + 20}})
	case ws.wire == "anthropic" && r.URL.Path == "/v1/messages":
		content := []any{map[string]any{"type": "text", "text": "Looking."}}
		for i, c := range turn.calls {
			content = append(content, map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_%d_%d", n, i), "name": c[0], "input": json.RawMessage(c[1])})
		}
		stop := "end_turn"
		if len(turn.calls) > 0 {
			stop = "tool_use"
		}
		json.NewEncoder(w).Encode(map[string]any{"id": "msg", "type": "message", "role": "assistant", "model": "worker-model",
			"content": content, "stop_reason": stop, "usage": map[string]any{"input_tokens": prompt, "output_tokens": 20}})
	default:
		http.NotFound(w, r)
	}
}

func (ws *workerServer) requests() []string {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return append([]string(nil), ws.bodies...)
}

// exploreSession copies the demo session with its header's cwd pointing at
// a fresh workspace holding the files the scripted worker reads.
func exploreSession(t *testing.T) (path, workspace string) {
	t.Helper()
	data, err := os.ReadFile("../../examples/demo-session.jsonl")
	if err != nil {
		t.Skipf("demo session: %v", err)
	}
	workspace = t.TempDir()
	files := map[string]string{
		"internal/importer/csv.go": "package importer\n\n// stripBOM drops a UTF-8 byte order mark.\nfunc stripBOM(s string) string { return s }\n",
		"docs/import.md":           "# Importing\n",
	}
	for name, content := range files {
		p := filepath.Join(workspace, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	data = bytes.Replace(data, []byte(`"cwd":"/home/dev/ledger"`), []byte(`"cwd":`+strconvQuote(workspace)), 1)
	path = filepath.Join(t.TempDir(), "session.jsonl")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path, workspace
}

func strconvQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// exploringWorker searches, reads a range, reads a file, marks it, adds a
// reference and writes the summary.
var exploringWorker = []workerTurn{
	{calls: [][2]string{{"search_session_log", `{"query":"BOM","limit":5}`}}},
	{calls: [][2]string{{"read_session_items", `{"from":1,"to":6}`}, {"read_file", `{"path":"internal/importer/csv.go"}`}}},
	{calls: [][2]string{{"mark_read_required", `{"path":"internal/importer/csv.go"}`}, {"add_reference", `{"path":"docs/import.md","note":"user-facing import docs"}`}}},
	{calls: [][2]string{{"write_summary", `{"text":"## Goal\nFix the CSV importer (BOM in the first column).\n\n## Next Steps\n- speed up ledger report"}`}}},
}

func TestCompactExploreEndToEnd(t *testing.T) {
	for _, wire := range []string{"openai", "anthropic"} {
		t.Run(wire, func(t *testing.T) {
			t.Setenv("OPENAI_API_KEY", "sk-test")
			t.Setenv("ANTHROPIC_API_KEY", "sk-ant-test")
			srv, url := startWorkerServer(t, wire, exploringWorker...)
			path, ws := exploreSession(t)
			// The workspace is a directory of the test's, not under the
			// current one: named, it is read.
			out, stderr, code := runCLI(t, "compact", path, "--strategy", "explore", "--provider", wire, "--base-url", url,
				"--model", "worker-model", "--keep-recent-tokens", "2000", "--workspace", ws, "--json")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			var res struct {
				Strategy        string `json:"strategy"`
				AutoReadEntryID string `json:"autoReadEntryId"`
				Summary         string `json:"summary"`
				Explore         struct {
					Turns          int            `json:"turns"`
					WorkerTokens   int            `json:"workerTokens"`
					ToolCalls      map[string]int `json:"toolCalls"`
					AutoReadFiles  []string       `json:"autoReadFiles"`
					OverviewTokens int            `json:"overviewTokens"`
				} `json:"explore"`
			}
			if err := json.Unmarshal([]byte(out), &res); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			x := res.Explore
			if res.Strategy != "explore" || x.Turns != 4 || x.ToolCalls["write_summary"] != 1 || len(x.AutoReadFiles) != 1 || res.AutoReadEntryID == "" || x.WorkerTokens == 0 {
				t.Errorf("result = %s", out)
			}
			if !strings.HasPrefix(res.Summary, "## Goal\nFix the CSV importer") {
				t.Errorf("summary = %q", res.Summary)
			}
			if !strings.Contains(stderr, "explore: turn 4/20: write_summary") {
				t.Errorf("no live turn lines: %s", stderr)
			}
			reqs := srv.requests()
			if len(reqs) != 4 {
				t.Fatalf("%d model requests", len(reqs))
			}
			if !strings.Contains(reqs[2], "stripBOM") || !strings.Contains(reqs[1], "#") {
				t.Errorf("tool results did not reach the model: %.500s", reqs[2])
			}

			// pi's context builder: the summary, the retained tail, then what
			// follows the compaction — the auto-read message.
			c := contextOf(t, path)
			if len(c.Roles) < 2 || c.Roles[0] != "compactionSummary" || c.Roles[len(c.Roles)-1] != "custom" {
				t.Errorf("context roles = %v", c.Roles)
			}
			data, _ := os.ReadFile(path)
			lines := strings.Split(strings.TrimSpace(string(data)), "\n")
			last := lines[len(lines)-1]
			if !strings.Contains(last, `"type":"custom_message"`) || !strings.Contains(last, "func stripBOM") || !strings.Contains(last, "docs/import.md — user-facing import docs") {
				t.Errorf("auto-read entry = %.400s", last)
			}
			if !strings.Contains(lines[len(lines)-2], `"strategy":"explore"`) {
				t.Errorf("compaction entry = %.400s", lines[len(lines)-2])
			}
		})
	}
}

// exploreFailure runs a failing explore compaction and checks the file is
// byte-identical and the error one clear line.
func exploreFailure(t *testing.T, script []workerTurn, configYAML, wantErr string) {
	t.Helper()
	t.Setenv("OPENAI_API_KEY", "sk-test")
	_, url := startWorkerServer(t, "openai", script...)
	path, _ := exploreSession(t)
	before, _ := os.ReadFile(path)
	args := []string{"compact", path, "--strategy", "explore", "--provider", "openai", "--base-url", url, "--model", "worker-model", "--keep-recent-tokens", "2000"}
	if configYAML != "" {
		cfg := filepath.Join(t.TempDir(), "pith.yaml")
		os.WriteFile(cfg, []byte(configYAML), 0o644)
		args = append(args, "--config", cfg)
	}
	_, stderr, code := runCLI(t, args...)
	if code == 0 {
		t.Fatal("the compaction succeeded")
	}
	after, _ := os.ReadFile(path)
	if !bytes.Equal(before, after) {
		t.Fatal("the session file changed")
	}
	errLine := ""
	for _, l := range strings.Split(strings.TrimSpace(stderr), "\n") {
		if strings.HasPrefix(l, "pith: ") || strings.HasPrefix(l, "error") {
			errLine = l
		}
	}
	if !strings.Contains(stderr, wantErr) || !strings.Contains(stderr, "the session is unchanged") {
		t.Errorf("stderr = %s (error line %q)", stderr, errLine)
	}
}

func TestCompactExploreNeverWritesSummary(t *testing.T) {
	exploreFailure(t, []workerTurn{{calls: [][2]string{{"search_session_log", `{"query":"report"}`}}}},
		"compaction:\n  workerMaxTurns: 3\n", "did not write a summary within workerMaxTurns (3)")
}

func TestCompactExploreOverflowsBudget(t *testing.T) {
	// The server counts 60 000 prompt tokens: over workerContextMaxTokens
	// (50 000) after the first turn.
	exploreFailure(t, []workerTurn{{calls: [][2]string{{"read_session_items", `{"mode":"full"}`}}, promptTokens: 60000}},
		"", "ran out of its context budget")
}

func TestCompactExploreNeedsToolModel(t *testing.T) {
	path, _ := exploreSession(t)
	before, _ := os.ReadFile(path)
	_, stderr, code := runCLI(t, "compact", path, "--strategy", "explore")
	after, _ := os.ReadFile(path)
	if code == 0 || !bytes.Equal(before, after) {
		t.Fatalf("exit %d, file changed: %v", code, !bytes.Equal(before, after))
	}
	if !strings.Contains(stderr, "summarizer.provider to openai or anthropic") || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
		t.Errorf("stderr = %q", stderr)
	}
}

// TestServeExplore: `pith serve` with compaction.strategy explore runs the
// worker for a manual compaction over gRPC, streams its turns as progress
// events, and the context it serves then ends with the auto-read message,
// whose reference is a file of the session's workspace — a directory under
// server.workspaceRoot.
func TestServeExplore(t *testing.T) {
	srv, url := startWorkerServer(t, "openai",
		workerTurn{calls: [][2]string{{"search_session_log", `{"query":"word"}`}}},
		workerTurn{calls: [][2]string{{"add_reference", `{"path":"notes.md","note":"the plan"}`}, {"write_summary", `{"text":"## Goal\nServe the explore strategy."}`}}},
	)
	dir := t.TempDir()
	wsRoot := t.TempDir()
	cfgPath := filepath.Join(dir, "pith.json")
	cfg, _ := json.Marshal(map[string]any{
		"contextWindow": 60000,
		"summarizer":    map[string]any{"provider": "openai", "baseUrl": url, "model": "worker-model"},
		"compaction":    map[string]any{"strategy": "explore", "retainedTokens": 300, "reserveTokens": 2000},
		"sessions":      map[string]any{"root": "sessions"},
		"server":        map[string]any{"shutdownTimeout": "5s", "workspaceRoot": wsRoot},
	})
	if err := os.WriteFile(cfgPath, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	p := startServe(t, cfgPath)
	c, err := client.Dial(p.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	ws := filepath.Join(wsRoot, "proj")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(ws, "notes.md"), []byte("# Plan\n"), 0o644)
	s, err := c.Create(ctx, "explore/session.jsonl", ws)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 8; i++ {
		if _, err := s.AppendMessages(ctx, serveMessage("user", fmt.Sprintf("u%d", i), 120), serveMessage("assistant", fmt.Sprintf("a%d", i), 120)); err != nil {
			t.Fatal(err)
		}
	}
	var kinds []string
	res, err := s.Compact(ctx, "", func(ev client.Event) { kinds = append(kinds, ev.Kind) })
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(res.Entry), `"strategy":"explore"`) || res.Summary == "" {
		t.Errorf("compaction = %s", res.Entry)
	}
	if strings.Count(strings.Join(kinds, ","), "compaction_progress") != 2 {
		t.Errorf("progress events = %v", kinds)
	}
	got, err := s.Context(ctx)
	if err != nil {
		t.Fatal(err)
	}
	last := got.Messages[len(got.Messages)-1]
	if !strings.Contains(string(last), "pith.compaction.autoRead") || !strings.Contains(string(last), "notes.md — the plan") {
		t.Errorf("last context message = %.300s", last)
	}
	if n := len(srv.requests()); n != 2 {
		t.Errorf("%d worker requests", n)
	}
}
