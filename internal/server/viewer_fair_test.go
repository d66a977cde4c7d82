package server

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pith-dev/pith/client"
	"github.com/pith-dev/pith/config"
)

// TestViewerSlotsSharedFairly: the viewer watches at most
// server.viewerMaxSessions sessions (64 here, the default), and a session
// with a live page (an open event stream) was never given up — so one
// caller's 64 live pages held every slot and every other caller got
// 503. Now the caller with more live pages gives up its least recently
// used one to a caller with fewer, and only down to a level share: its
// page reconnecting for the slot back gets 503, not the other's slot.
func TestViewerSlotsSharedFairly(t *testing.T) {
	const slots = config.DefaultViewerMaxSessions
	cfg := testConfig(t.TempDir())
	cfg.Server.Tokens = []config.Token{
		{Name: "a", SHA256: HashToken("secret-a")},
		{Name: "b", SHA256: HashToken("secret-b")},
	}
	h := startServer(t, cfg)
	hs := httptestServer(t, h.srv.NewViewer(false))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := client.Dial(h.addr, client.WithToken("secret-a"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	name := func(i int) string { return fmt.Sprintf("s%02d.jsonl", i) }
	for i := range slots + 2 {
		s, err := c.Create(ctx, name(i), "/w")
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// live opens a session's live page stream as tok: its body once the
	// first event came, or the status it was refused with.
	live := func(tok string, i int) (io.ReadCloser, int) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, hs.URL+"/s/"+name(i)+"/api/events", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK {
			resp.Body.Close()
			return nil, resp.StatusCode
		}
		br := bufio.NewReader(resp.Body)
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				t.Fatalf("live page of %s: %v before its first event", name(i), err)
			}
			if strings.HasPrefix(line, "event: version") {
				return resp.Body, http.StatusOK
			}
		}
	}
	var pages []io.ReadCloser
	defer func() {
		for _, p := range pages {
			p.Close()
		}
	}()
	for i := range slots {
		body, code := live("secret-a", i)
		if code != http.StatusOK {
			t.Fatalf("a's live page %d of %d: %d", i+1, slots, code)
		}
		pages = append(pages, body)
	}
	// Every slot holds one of a's live pages. b still gets in.
	body, code := live("secret-b", slots)
	if code != http.StatusOK {
		t.Fatalf("another caller's live page while one caller holds every slot: %d, want 200", code)
	}
	pages = append(pages, body)
	// ... and it was one of a's pages that made room: its stream ended.
	ended := make(chan int, slots)
	for i, p := range pages[:slots] {
		go func() {
			if _, err := io.Copy(io.Discard, p); err == nil {
				ended <- i
			}
		}()
	}
	select {
	case i := <-ended:
		t.Logf("a's live page of %s made room", name(i))
	case <-ctx.Done():
		t.Fatal("no live page of a ended to make room for b")
	}
	// a's page reconnecting, or a new one of a, does not take b's slot
	// back: a has 63 live pages, b one.
	if _, code := live("secret-a", slots+1); code != http.StatusServiceUnavailable {
		t.Fatalf("a's next live page with slots shared 63:1: %d, want 503", code)
	}
	body, code = live("secret-b", slots)
	if code != http.StatusOK {
		t.Fatalf("b's live page after a asked again: %d, want 200", code)
	}
	body.Close()
}
