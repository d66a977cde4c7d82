package pi_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// modelServer is pi's model: an OpenAI-compatible chat completions
// endpoint on loopback, streaming server-sent events as pi's
// openai-completions provider reads them. A request from pi's own
// summarizer (its system prompt) is answered with piOwnSummary, so a test
// can tell pi's compaction from Pith's; every other request with a short
// reply whose reported prompt size is promptTokens (what pi's threshold
// check reads).
type modelServer struct {
	URL string
	mu  sync.Mutex
	// promptTokens is the usage reported for the next replies.
	promptTokens int
	replies      int
	summaries    int
	busy         time.Duration
}

func (ms *modelServer) busyTime() time.Duration {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	return ms.busy
}

const piOwnSummary = "PI-OWN-SUMMARY: pi summarized this session by itself."

func newModelServer(t testing.TB) *modelServer {
	ms := &modelServer{promptTokens: 100}
	srv := httptest.NewServer(http.HandlerFunc(ms.serve))
	t.Cleanup(srv.Close)
	ms.URL = srv.URL + "/v1"
	return ms
}

func (ms *modelServer) setPromptTokens(n int) {
	ms.mu.Lock()
	ms.promptTokens = n
	ms.mu.Unlock()
}

func (ms *modelServer) counts() (replies, summaries int) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	return ms.replies, ms.summaries
}

func (ms *modelServer) serve(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	defer func() {
		ms.mu.Lock()
		ms.busy += time.Since(start)
		ms.mu.Unlock()
	}()
	if r.URL.Path != "/v1/chat/completions" {
		http.NotFound(w, r)
		return
	}
	body, _ := io.ReadAll(r.Body)
	ms.mu.Lock()
	prompt := ms.promptTokens
	var text string
	if strings.Contains(string(body), "context summarization assistant") {
		ms.summaries++
		text = piOwnSummary
	} else {
		ms.replies++
		text = fmt.Sprintf("Reply %d. %s", ms.replies, strings.Repeat("The work goes on as planned. ", 12))
	}
	ms.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	send := func(v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "data: %s\n\n", b)
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{"id": "chatcmpl-loop", "object": "chat.completion.chunk", "model": "loop-model",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
	}
	send(chunk(map[string]any{"role": "assistant", "content": ""}, nil))
	for _, part := range strings.SplitAfter(text, ". ") {
		send(chunk(map[string]any{"content": part}, nil))
	}
	send(chunk(map[string]any{}, "stop"))
	send(map[string]any{"id": "chatcmpl-loop", "object": "chat.completion.chunk", "model": "loop-model", "choices": []any{},
		"usage": map[string]any{"prompt_tokens": prompt, "completion_tokens": 40, "total_tokens": prompt + 40}})
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// summarizerServer is Pith's summarizer: OpenAI-compatible chat
// completions, not streamed. A plain request gets pithSummary; a request
// offering tools (the exploring worker) gets the scripted tool calls, one
// turn per request. It records every request body, and with hold set it
// keeps each request open until the client goes away, reporting that on
// gone.
type summarizerServer struct {
	URL    string
	mu     sync.Mutex
	bodies []string
	worker [][][2]string
	turn   int
	hold   bool
	// busy is the time spent answering requests, in all.
	busy time.Duration
	// arrived gets one value per held request; gone one per held request
	// whose client went away.
	arrived chan struct{}
	gone    chan struct{}
}

const pithSummary = "## Goal\nPITH-SUMMARY: made by Pith's summarizer.\n\n## Next Steps\n1. Go on."

func newSummarizerServer(t testing.TB) *summarizerServer {
	ss := &summarizerServer{arrived: make(chan struct{}, 16), gone: make(chan struct{}, 16)}
	srv := httptest.NewServer(http.HandlerFunc(ss.serve))
	t.Cleanup(srv.Close)
	ss.URL = srv.URL + "/v1"
	return ss
}

func (ss *summarizerServer) requests() []string {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return append([]string(nil), ss.bodies...)
}

func (ss *summarizerServer) busyTime() time.Duration {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.busy
}

func (ss *summarizerServer) serve(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	defer func() {
		ss.mu.Lock()
		ss.busy += time.Since(start)
		ss.mu.Unlock()
	}()
	if r.URL.Path != "/v1/chat/completions" {
		http.NotFound(w, r)
		return
	}
	body, _ := io.ReadAll(r.Body)
	ss.mu.Lock()
	ss.bodies = append(ss.bodies, string(body))
	hold := ss.hold
	var calls [][2]string
	if strings.Contains(string(body), `"tools"`) && len(ss.worker) > 0 {
		calls = ss.worker[min(ss.turn, len(ss.worker)-1)]
		ss.turn++
	}
	ss.mu.Unlock()
	if hold {
		ss.arrived <- struct{}{}
		<-r.Context().Done()
		ss.gone <- struct{}{}
		return
	}
	msg := map[string]any{"role": "assistant", "content": pithSummary}
	finish := "stop"
	if len(calls) > 0 {
		var tc []any
		for i, c := range calls {
			tc = append(tc, map[string]any{"id": fmt.Sprintf("call_%d", i), "type": "function",
				"function": map[string]any{"name": c[0], "arguments": c[1]}})
		}
		msg = map[string]any{"role": "assistant", "content": nil, "tool_calls": tc}
		finish = "tool_calls"
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"id": "c", "object": "chat.completion", "model": "summarizer-model",
		"choices": []any{map[string]any{"index": 0, "finish_reason": finish, "message": msg}},
		"usage":   map[string]any{"prompt_tokens": len(body) / 4, "completion_tokens": 50, "total_tokens": len(body)/4 + 50}})
}
