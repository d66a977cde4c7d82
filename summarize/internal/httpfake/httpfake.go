// Package httpfake is the test kit shared by the summarizer providers'
// tests (summarize and summarize/llm): a real HTTP server on
// loopback answering from a script, golden-file comparison of JSON request
// bodies, and a recording fake for summarize.SleepFunc. Only tests import
// it, so no binary links it. It does not import summarize, so the
// package's own (internal) tests may use it without an import cycle.
package httpfake

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// Reply is one scripted answer of a Server.
type Reply struct {
	Status  int // 0 means 200
	Headers map[string]string
	Body    string // sent as is
	File    string // or the contents of testdata/<File>
	// Hang never answers: the handler waits until the client gives up.
	Hang bool
	// Close drops the connection without an answer.
	Close bool
}

// Received is what the server saw of one request.
type Received struct {
	Method string
	Path   string
	Header http.Header
	Body   []byte
}

// Server answers from a script, one reply per request (the last one
// repeats), and records each request. With an empty script it answers 500.
type Server struct {
	t       testing.TB
	srv     *httptest.Server
	mu      sync.Mutex
	script  []Reply
	got     []Received
	release chan struct{}
}

// NewServer starts a Server; it is closed when the test ends.
func NewServer(t testing.TB, script ...Reply) *Server {
	t.Helper()
	f := &Server{t: t, script: script, release: make(chan struct{})}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	// Cleanups run last-registered first: unblock hanging handlers, then
	// close the server (Close waits for handlers).
	t.Cleanup(f.srv.Close)
	t.Cleanup(func() { close(f.release) })
	return f
}

// URL is the server's root, http://127.0.0.1:port.
func (f *Server) URL() string { return f.srv.URL }

// Close stops the server early, so that its URL refuses connections.
func (f *Server) Close() { f.srv.Close() }

func (f *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	n := len(f.got)
	f.got = append(f.got, Received{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
	rep := Reply{Status: http.StatusInternalServerError, Body: "no scripted reply"}
	if len(f.script) > 0 {
		rep = f.script[min(n, len(f.script)-1)]
	}
	f.mu.Unlock()

	switch {
	case rep.Hang:
		select {
		case <-r.Context().Done():
		case <-f.release:
		}
		return
	case rep.Close:
		hj, ok := w.(http.Hijacker)
		if !ok {
			f.t.Errorf("fake server: cannot hijack")
			return
		}
		conn, _, err := hj.Hijack()
		if err == nil {
			_ = conn.Close()
		}
		return
	}
	data := []byte(rep.Body)
	if rep.File != "" {
		var err error
		data, err = os.ReadFile(filepath.Join("testdata", rep.File))
		if err != nil {
			f.t.Errorf("fake server: %v", err)
		}
	}
	if json.Valid(data) {
		w.Header().Set("Content-Type", "application/json")
	} else {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	}
	for k, v := range rep.Headers {
		w.Header().Set(k, v)
	}
	status := rep.Status
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	_, _ = w.Write(data)
}

// Requests returns a copy of what the server received so far.
func (f *Server) Requests() []Received {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Received(nil), f.got...)
}

// CheckGolden compares JSON against testdata/<name> structurally (key
// order and spacing do not matter); with update it rewrites the file
// instead.
func CheckGolden(t *testing.T, name string, got []byte, update bool) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if update {
		var buf bytes.Buffer
		if err := json.Indent(&buf, got, "", "  "); err != nil {
			t.Fatalf("golden %s: %v", name, err)
		}
		buf.WriteByte('\n')
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("golden %s: %v (run with -update to create it)", name, err)
	}
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("golden %s: request body is not JSON: %v\n%s", name, err, got)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatalf("golden %s: %v", name, err)
	}
	gj, _ := json.Marshal(g)
	wj, _ := json.Marshal(w)
	if !bytes.Equal(gj, wj) {
		t.Errorf("request body differs from %s:\n got: %s\nwant: %s", name, gj, wj)
	}
}

// BodyJSON decodes a request body into a generic map.
func BodyJSON(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("request body is not a JSON object: %v\n%s", err, b)
	}
	return m
}

// SleepRecorder is a fake summarize.SleepFunc: it records each wait and
// returns at once (or ctx.Err() when ctx is already done), so no test
// really backs off.
type SleepRecorder struct {
	mu     sync.Mutex
	delays []time.Duration
}

// Sleep has the summarize.SleepFunc signature.
func (s *SleepRecorder) Sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.delays = append(s.delays, d)
	s.mu.Unlock()
	return ctx.Err()
}

// Delays returns the waits asked for so far, in order.
func (s *SleepRecorder) Delays() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.delays...)
}

// TestKey is the credential the provider tests put in the environment; no
// error text may ever contain it.
const TestKey = "sk-test-secret-0123456789"
