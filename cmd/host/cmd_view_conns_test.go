package main

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/pith-dev/pith/internal/admission"
	"github.com/pith-dev/pith/internal/wiring"
)

// startView runs `pith view` on the demo session in this process and
// returns its URL; it stops when the test ends.
func startView(t *testing.T) string {
	t.Helper()
	cmd := newViewCommand()
	var out lockedBuffer
	cmd.SetOut(&out)
	cmd.SetErr(io.Discard)
	cmd.SetArgs([]string{"../../examples/demo-session.jsonl"})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if s := out.String(); strings.HasSuffix(s, "\n") {
			return strings.TrimSpace(s)
		}
	}
	t.Fatalf("pith view printed %q, no URL", out.String())
	return ""
}

// viewCaps are the caps pith view derives for itself here: one
// listener, this process's descriptor limit (the test runs pith view
// in-process).
func viewCaps() admission.Caps { return admission.DefaultCaps(admission.DescriptorLimit(), 1) }

// TestViewStreamsCapped: pith view's live update streams past its cap
// (half of one address's connections) are refused with 503 and a
// Retry-After, and a page still loads beside them. Before, it took
// every stream asked for (19 990 of them, until accept4 failed with too
// many open files).
func TestViewStreamsCapped(t *testing.T) {
	u := startView(t)
	want := wiring.ViewerStreams(viewCaps()).PerAddress
	streams := openStreams(t, u+"api/events", want+3)
	if streams.ok != want || streams.refused != 3 {
		t.Fatalf("%d streams open, %d refused (%v); want %d and 3", streams.ok, streams.refused, streams.other, want)
	}
	if streams.retryAfter == "" {
		t.Error("a refused stream has no Retry-After")
	}
	resp, err := http.Get(u + "api/session")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("a page beside the streams: %s", resp.Status)
	}
}

// TestViewSurvivesConnectionFlood: idle connections from one address
// past pith view's per-address cap are closed at once, and a page loads
// from another address meanwhile.
func TestViewSurvivesConnectionFlood(t *testing.T) {
	u := startView(t)
	pu, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	n := viewCaps().PerKey + 100
	f := startFlood(t, "127.0.0.2", pu.Host, n, 3*n)
	for f.dials.Load() < int64(n) {
		time.Sleep(10 * time.Millisecond)
	}
	hc := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()
	resp, err := hc.Get(u + "api/session")
	if err != nil {
		t.Fatalf("a page during the flood: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("a page during the flood: %s", resp.Status)
	}
	if f.closedFast.Load() == 0 {
		t.Errorf("none of %d connections from one address was closed at once: nothing caps one address", n)
	}
	t.Logf("flood of %d: %d held, %d closed at once", n, f.held.Load(), f.closedFast.Load())
	f.stop()
}
