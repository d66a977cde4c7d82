package server

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/pith-dev/pith/client"
	"github.com/pith-dev/pith/config"
)

// viewerHarness is a daemon with two tokens (one for everything, one for
// team-a/ only) and its viewer on a loopback HTTP server.
func viewerHarness(t *testing.T) (*harness, *httptest.Server, *client.Client) {
	t.Helper()
	cfg := testConfig(t.TempDir())
	cfg.Server.Tokens = []config.Token{
		{Name: "admin", SHA256: HashToken("admin-secret")},
		{Name: "team", SHA256: HashToken("team-secret"), Prefix: "team-a/"},
	}
	h := startServer(t, cfg)
	v := h.srv.NewViewer(false)
	hs := httptest.NewServer(v)
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
		v.Close()
	})
	c, err := client.Dial(h.addr, client.WithToken("admin-secret"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return h, hs, c
}

func browser(t *testing.T) *http.Client {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar, Timeout: 30 * time.Second}
}

func get(t *testing.T, c *http.Client, u string) (int, string) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestViewerLoginAndPrefix: without credentials the viewer sends a page
// request to the login form and refuses the API; a token posted once
// becomes an HttpOnly, SameSite=Strict cookie, and the token's prefix
// limits what the index lists and what can be opened.
func TestViewerLoginAndPrefix(t *testing.T) {
	_, hs, c := viewerHarness(t)
	ctx := context.Background()
	for _, name := range []string{"team-a/one.jsonl", "team-b/two.jsonl"} {
		s, err := c.Create(ctx, name, "/w")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.AppendMessages(ctx, userMsg("hello", 20)); err != nil {
			t.Fatal(err)
		}
	}

	b := browser(t)
	b.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := b.Get(hs.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/login" {
		t.Fatalf("anonymous index: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	if code, _ := get(t, b, hs.URL+"/s/team-a/one.jsonl/api/session"); code != http.StatusUnauthorized {
		t.Fatalf("anonymous API: %d", code)
	}
	resp, err = b.PostForm(hs.URL+"/login", url.Values{"token": {"wrong"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("wrong token: %d", resp.StatusCode)
	}

	resp, err = b.PostForm(hs.URL+"/login", url.Values{"token": {"team-secret"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	set := resp.Header.Get("Set-Cookie")
	if resp.StatusCode != http.StatusSeeOther || !strings.Contains(set, "HttpOnly") || !strings.Contains(set, "SameSite=Strict") {
		t.Fatalf("login: %d, Set-Cookie %q", resp.StatusCode, set)
	}
	if loc := resp.Header.Get("Location"); strings.Contains(loc, "secret") {
		t.Fatalf("the token is in a URL: %q", loc)
	}
	code, body := get(t, b, hs.URL+"/")
	if code != http.StatusOK || !strings.Contains(body, "team-a/one.jsonl") || strings.Contains(body, "team-b") {
		t.Fatalf("index for team-a/: %d\n%s", code, body)
	}
	if code, _ := get(t, b, hs.URL+"/s/team-a/one.jsonl/api/session"); code != http.StatusOK {
		t.Fatalf("own session: %d", code)
	}
	if code, _ := get(t, b, hs.URL+"/s/team-b/two.jsonl/api/session"); code != http.StatusForbidden {
		t.Fatalf("another prefix's session: %d", code)
	}
	if code, _ := get(t, b, hs.URL+"/s/..%2f..%2fetc/passwd.jsonl/api/session"); code == http.StatusOK {
		t.Fatal("a name outside the grammar was served")
	}
	req, _ := http.NewRequest(http.MethodPost, hs.URL+"/s/team-a/one.jsonl/api/session", nil)
	resp, err = b.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("POST to the viewer: %d", resp.StatusCode)
	}
}

// TestViewerLive: an append through the daemon reaches an open event
// stream of the viewer without a reload.
func TestViewerLive(t *testing.T) {
	_, hs, c := viewerHarness(t)
	ctx := context.Background()
	s, err := c.Create(ctx, "live.jsonl", "/w")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendMessages(ctx, userMsg("first", 20)); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, hs.URL+"/s/live.jsonl/api/events", nil)
	req.Header.Set("Authorization", "Bearer admin-secret")
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(rctx))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("events: %d", resp.StatusCode)
	}
	lines := bufio.NewScanner(resp.Body)
	next := func() string {
		for lines.Scan() {
			if l := lines.Text(); strings.HasPrefix(l, "data: ") {
				return l
			}
		}
		t.Fatalf("stream ended: %v", lines.Err())
		return ""
	}
	first := next()
	if _, err := s.AppendMessages(ctx, assistantMsg("second", 20)); err != nil {
		t.Fatal(err)
	}
	second := next()
	if first == second || !strings.Contains(second, fmt.Sprintf(`"entries":%d`, countEntries(t, hs, "live.jsonl"))) {
		t.Fatalf("events %q then %q", first, second)
	}
}

func countEntries(t *testing.T, hs *httptest.Server, name string) int {
	req, _ := http.NewRequest(http.MethodGet, hs.URL+"/s/"+name+"/api/session", nil)
	req.Header.Set("Authorization", "Bearer admin-secret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var n int
	body, _ := io.ReadAll(resp.Body)
	if i := strings.Index(string(body), `"entries":`); i >= 0 {
		fmt.Sscanf(string(body[i+len(`"entries":`):]), "%d", &n)
	}
	return n
}
