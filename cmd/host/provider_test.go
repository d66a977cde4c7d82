package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
)

// TestCompactThroughOpenAICompatibleServer: `pith compact --provider openai`
// against a loopback server speaking the chat-completions wire format that
// answers the first request with 429 and retry-after. The CLI retries, saves
// the server's summary, and what it sent carries the <conversation> block.
func TestCompactThroughOpenAICompatibleServer(t *testing.T) {
	const summary = "## Goal\nFix the CSV importer.\n\n## Critical Context\n- served by the loopback model"
	var (
		mu       sync.Mutex
		requests []map[string]any
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		body, _ := io.ReadAll(r.Body)
		var req map[string]any
		json.Unmarshal(body, &req)
		mu.Lock()
		requests = append(requests, req)
		n := len(requests)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if n == 1 {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`)
			return
		}
		json.NewEncoder(w).Encode(map[string]any{
			"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": req["model"],
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": summary}}},
			"usage": map[string]any{"prompt_tokens": 900, "completion_tokens": 40, "total_tokens": 940},
		})
	}))
	defer srv.Close()
	t.Setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")

	path := copyFile(t, "../../examples/demo-session.jsonl")
	out, stderr, code := runCLI(t, "compact", path, "--provider", "openai", "--base-url", srv.URL+"/v1",
		"--model", "local-model", "--keep-recent-tokens", "8000", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if strings.Contains(stderr, "sk-test-not-a-real-key") || strings.Contains(out, "sk-test-not-a-real-key") {
		t.Fatal("the API key was printed")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(requests) < 2 {
		t.Fatalf("%d requests: no retry after the 429", len(requests))
	}
	msgs, _ := requests[1]["messages"].([]any)
	var prompt string
	for _, m := range msgs {
		if mm, _ := m.(map[string]any); mm["role"] == "user" {
			prompt, _ = mm["content"].(string)
		}
	}
	if !strings.Contains(prompt, "<conversation>") || !strings.Contains(prompt, "</conversation>") {
		t.Fatalf("the request has no <conversation> block: %.300s", prompt)
	}
	if requests[1]["model"] != "local-model" {
		t.Fatalf("model %v", requests[1]["model"])
	}
	data, _ := os.ReadFile(path)
	if !strings.Contains(string(data), `served by the loopback model`) {
		t.Fatal("the server's summary was not saved")
	}
}
