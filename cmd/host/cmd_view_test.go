package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestViewServesAndStops(t *testing.T) {
	cmd := newViewCommand()
	var out lockedBuffer
	cmd.SetOut(&out)
	cmd.SetErr(io.Discard)
	cmd.SetArgs([]string{"../../examples/demo-session.jsonl"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()

	var url string
	for deadline := time.Now().Add(30 * time.Second); url == "" && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if s := out.String(); strings.HasSuffix(s, "\n") {
			url = strings.TrimSpace(s)
		}
	}
	if !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("printed %q, want the page's loopback URL", out.String())
	}
	resp, err := http.Get(url + "api/session")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !bytes.Contains(body, []byte(`"entries":37`)) {
		t.Fatalf("api/session: %d %s", resp.StatusCode, body)
	}
	// An open event stream must not hold the shutdown up.
	stream, err := http.Get(url + "api/events")
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Body.Close()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("view ended with %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("view did not stop when its context ended")
	}
}

func TestViewRefusals(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"view", "--listen", "0.0.0.0:0", "../../examples/demo-session.jsonl"}, "only a loopback address"},
		{[]string{"view", "--listen", "example.com:80", "../../examples/demo-session.jsonl"}, "only a loopback address"},
		{[]string{"view", "--listen", "nonsense", "../../examples/demo-session.jsonl"}, "--listen"},
		{[]string{"view", "/nonexistent/session.jsonl"}, "nonexistent"},
	} {
		_, stderr, code := runCLI(t, tc.args...)
		if code == 0 || !strings.Contains(stderr, tc.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%v: code %d, stderr %q; want one line with %q", tc.args, code, stderr, tc.want)
		}
	}
}
