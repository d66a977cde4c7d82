package server

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/pith-dev/pith/config"
)

// TestViewerMaxSessionsConfigured: how many sessions the viewer keeps
// open at once (each read whole into memory, its file followed) is
// server.viewerMaxSessions, read on every open so a reload applies at
// once. It was fixed at 64 whatever the daemon's memory or its users'
// number.
func TestViewerMaxSessionsConfigured(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.Server.ViewerMaxSessions = 2
	h := startServer(t, cfg)
	hs := httptestServer(t, h.srv.NewViewer(false))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	name := func(i int) string { return fmt.Sprintf("v%d.jsonl", i) }
	for i := range 4 {
		s, err := h.client.Create(ctx, name(i), "/w")
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	get := func(i int) int {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, hs.URL+"/s/"+name(i)+"/api/session", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for i := range 4 {
		if code := get(i); code != http.StatusOK {
			t.Fatalf("page of %s: %d", name(i), code)
		}
		if n := h.srv.viewer.Load().Open(); n > 2 {
			t.Fatalf("the viewer keeps %d sessions open, server.viewerMaxSessions is 2", n)
		}
	}
	// A reload raising it applies to the next page.
	next := *h.srv.Config()
	next.Server.ViewerMaxSessions = 3
	h.srv.ApplyConfig(config.Change{Old: cfg, New: &next})
	for i := range 4 {
		if code := get(i); code != http.StatusOK {
			t.Fatalf("page of %s: %d", name(i), code)
		}
	}
	if n := h.srv.viewer.Load().Open(); n != 3 {
		t.Fatalf("the viewer keeps %d sessions open after server.viewerMaxSessions was raised to 3", n)
	}
	// ... and one lowering it closes idle sessions down to it.
	lower := next
	lower.Server.ViewerMaxSessions = 1
	h.srv.ApplyConfig(config.Change{Old: &next, New: &lower})
	if code := get(0); code != http.StatusOK {
		t.Fatalf("page of %s: %d", name(0), code)
	}
	if n := h.srv.viewer.Load().Open(); n != 1 {
		t.Fatalf("the viewer keeps %d sessions open after server.viewerMaxSessions was lowered to 1", n)
	}
}
