package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/pith-dev/pith/config"
	"github.com/pith-dev/pith/core/engine"
	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/core/tokens"
	"github.com/pith-dev/pith/hooks"
	"github.com/pith-dev/pith/internal/wiring"
	"github.com/pith-dev/pith/store/files"
	"github.com/pith-dev/pith/summarize"
)

// strictServer is an OpenAI-compatible chat-completions server that, like
// the real APIs, rejects a request whose input plus max_tokens exceeds its
// window (input counted chars/4 per message, rounded up, as Pith
// estimates). It records every request it saw.
type strictServer struct {
	window int
	mu     sync.Mutex
	seen   []sizedRequest
}

type sizedRequest struct {
	purpose  string
	input    int
	maxOut   int
	rejected bool
}

func (s *strictServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model    string `json:"model"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		MaxTokens           int `json:"max_tokens"`
		MaxCompletionTokens int `json:"max_completion_tokens"`
	}
	body, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	in, prompt := 0, ""
	for _, m := range req.Messages {
		var text string
		if json.Unmarshal(m.Content, &text) != nil {
			var parts []struct{ Text string }
			json.Unmarshal(m.Content, &parts)
			for _, p := range parts {
				text += p.Text
			}
		}
		in += (tokens.Units(text) + 3) / 4
		if m.Role == "user" {
			prompt = text
		}
	}
	out := max(req.MaxTokens, req.MaxCompletionTokens)
	sr := sizedRequest{purpose: purposeOf(prompt), input: in, maxOut: out, rejected: in+out > s.window}
	s.mu.Lock()
	s.seen = append(s.seen, sr)
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if sr.rejected {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"error":{"message":"This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the messages, %d in the completion).","type":"invalid_request_error","code":"context_length_exceeded"}}`,
			s.window, in+out, in, out)
		return
	}
	text := "## Goal\nShip the importer.\n\n## Next Steps\n1. Release."
	if sr.purpose == "short" {
		text = "The importer ships."
	}
	json.NewEncoder(w).Encode(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": req.Model,
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": text}}},
		"usage":   map[string]any{"prompt_tokens": in, "completion_tokens": 20, "total_tokens": in + 20},
	})
}

// purposeOf tells the request kinds apart by their prompts' endings.
func purposeOf(prompt string) string {
	switch {
	case strings.HasPrefix(prompt, "<summary>"):
		return "short"
	case strings.Contains(prompt, "Original Request"):
		return "turn-prefix"
	case strings.Contains(prompt, "<conversation>") && strings.Contains(prompt, "branch"):
		return "branch"
	case strings.Contains(prompt, "<conversation>"):
		return "history"
	}
	return "completion"
}

func (s *strictServer) requests() []sizedRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]sizedRequest(nil), s.seen...)
}

// splitTurnSession writes two turns of tool work, ~5 000 and ~15 000
// estimated tokens (a third of it assistant text, which a branch summary
// reads), so that a compaction keeping 2 000 tokens splits the
// second turn: a history request and a turn-prefix request, both far
// larger than a 6 000-token window.
func splitTurnSession(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s.jsonl")
	st, err := files.Create(path, "/repo", files.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	add := func(m string) {
		if _, err := st.Append(session.Draft{Type: session.TypeMessage, Fields: json.RawMessage(`{"message":` + m + `}`)}); err != nil {
			t.Fatal(err)
		}
	}
	call := 0
	turn := func(ask string, n int) {
		add(`{"role":"user","content":` + mustJSON(ask) + `}`)
		for range n {
			call++
			id := fmt.Sprintf("call%d", call)
			add(fmt.Sprintf(`{"role":"assistant","content":[{"type":"text","text":"Checking step %d. %s"},{"type":"toolCall","id":%q,"name":"bash","arguments":{"command":"go test ./importer/..."}}],"provider":"p","model":"m","usage":{"input":100,"output":10,"cacheRead":0,"cacheWrite":0,"totalTokens":110},"stopReason":"toolUse"}`, call, strings.Repeat("The quoted-newline case still splits the row early. ", 8), id))
			add(fmt.Sprintf(`{"role":"toolResult","toolCallId":%q,"toolName":"bash","content":[{"type":"text","text":%s}],"isError":false}`,
				id, mustJSON(strings.Repeat(fmt.Sprintf("ok importer/case%d 0.01s\n", call), 60))))
		}
	}
	turn("Make the CSV importer accept quoted newlines.", 10)
	turn("Now make it stream rows instead of loading the file.", 30)
	return path
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestSummarizerRequestsFitTheWindow: with a 6 000-token summarizer window
// every request kind — history, split-turn prefix, short summary, branch
// summary, a plugin's HostAPI completion — reaches a server that rejects
// input + max_tokens > window only when it fits, and close to the edge; a
// completion that cannot fit is refused without being sent.
func TestSummarizerRequestsFitTheWindow(t *testing.T) {
	const window = 6000
	srv := &strictServer{window: window}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	t.Setenv("OPENAI_API_KEY", "sk-test")
	cfgPath := configFile(t, map[string]any{
		"compaction":    map[string]any{"reserveTokens": 4000, "keepRecentTokens": 2000, "shortSummary": true, "calibrateKeepRecent": false},
		"summarizer":    map[string]any{"provider": "openai", "model": "m", "baseUrl": hs.URL + "/v1", "contextWindow": window, "maxOutputTokens": 4096},
		"branchSummary": map[string]any{"contextWindow": 128000},
		"retry":         map[string]any{"enabled": false},
	})
	path := splitTurnSession(t)

	out, stderr, code := runCLI(t, "compact", path, "--config", cfgPath, "--json")
	if code != 0 {
		t.Fatalf("compact: exit %d: %s", code, stderr)
	}
	var res struct {
		IsSplitTurn  bool   `json:"isSplitTurn"`
		ShortSummary string `json:"shortSummary"`
	}
	json.Unmarshal([]byte(out), &res)
	if !res.IsSplitTurn || res.ShortSummary != "The importer ships." {
		t.Fatalf("compact: %s", out)
	}

	f, err := session.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	first := f.Entries[1].ID // the first assistant message: the rest is abandoned
	if _, stderr, code := runCLI(t, "navigate", path, "--config", cfgPath, "--to", first, "--summarize"); code != 0 {
		t.Fatalf("navigate: exit %d: %s", code, stderr)
	}

	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	sum, _, err := wiring.Summarizer(cfg, wiring.Provider{}, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	host := &engine.HostAPI{Summarizer: sum}
	edge := strings.Repeat("abcd", window-1000-10) // ~4 990 tokens + 1 000 output
	if _, err := host.Complete(context.Background(), hooks.CompleteRequest{Prompt: edge, MaxTokens: 1000}); err != nil {
		t.Fatalf("a completion that fits: %v", err)
	}
	before := len(srv.requests())
	_, err = host.Complete(context.Background(), hooks.CompleteRequest{Prompt: edge + strings.Repeat("abcd", 20), MaxTokens: 1000})
	if !errors.Is(err, summarize.ErrRequestTooLarge) || len(srv.requests()) != before {
		t.Fatalf("a completion over the window: %v, sent: %v", err, len(srv.requests()) != before)
	}
	if _, err := host.Complete(context.Background(), hooks.CompleteRequest{Prompt: edge}); !errors.Is(err, summarize.ErrRequestTooLarge) {
		t.Fatalf("a completion without max_tokens is checked against the provider's default cap: %v", err)
	}

	kinds := map[string]bool{}
	for _, r := range srv.requests() {
		kinds[r.purpose] = true
		if r.rejected {
			t.Errorf("%s request rejected: %d input + %d output > %d", r.purpose, r.input, r.maxOut, window)
		}
		// Clipping works toward the bound: the conversation requests use
		// the window, not a fraction of it.
		if r.purpose != "short" && r.input+r.maxOut < window*8/10 {
			t.Errorf("%s request uses only %d + %d of %d tokens", r.purpose, r.input, r.maxOut, window)
		}
	}
	for _, k := range []string{"history", "turn-prefix", "short", "branch", "completion"} {
		if !kinds[k] {
			t.Errorf("no %s request reached the server; saw %v", k, srv.requests())
		}
	}
}
