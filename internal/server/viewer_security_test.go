package server

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pith-dev/pith/client"
)

// anonymousViewer is a daemon with no tokens and no client certificates —
// the default, on loopback — and its viewer on a loopback HTTP server.
func anonymousViewer(t *testing.T) (*harness, *httptest.Server) {
	t.Helper()
	h := startServer(t, testConfig(t.TempDir()))
	return h, httptestServer(t, h.srv.NewViewer(false))
}

func getWithHost(t *testing.T, u, host string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestViewerAnonymousRefusesForeignHost: a daemon's viewer that takes
// anonymous requests (loopback, no server.tokens) must answer only to names
// that are loopback by definition. Otherwise any web page the user visits
// can point a name of its own at 127.0.0.1 (DNS rebinding) and read every
// session under sessions.root as a same-origin page: the index, the
// entries, the prune archive.
func TestViewerAnonymousRefusesForeignHost(t *testing.T) {
	h, hs := anonymousViewer(t)
	ctx := context.Background()
	s, err := h.client.Create(ctx, "secret.jsonl", "/w")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendMessages(ctx, userMsg("api-key-here", 20)); err != nil {
		t.Fatal(err)
	}
	port := hs.Listener.Addr().String()[len("127.0.0.1"):]
	for _, path := range []string{"/", "/s/secret.jsonl/api/session", "/s/secret.jsonl/api/events", "/app.css", "/login"} {
		if code := getWithHost(t, hs.URL+path, "rebind.example"+port); code != http.StatusMisdirectedRequest {
			t.Errorf("GET %s with Host rebind.example: %d, want 421", path, code)
		}
	}
	// Loopback names still work.
	for _, host := range []string{"127.0.0.1" + port, "localhost" + port, "[::1]" + port, "[::1]", "LOCALHOST" + port} {
		if code := getWithHost(t, hs.URL+"/s/secret.jsonl/api/session", host); code != http.StatusOK {
			t.Errorf("GET with Host %s: %d, want 200", host, code)
		}
	}
}

// TestViewerWithTokensAllowsRealHostName: with server.tokens every request
// needs the cookie or header (bound to the origin that signed in), so a
// real host name in front of the daemon is fine.
func TestViewerWithTokensAllowsRealHostName(t *testing.T) {
	_, hs, c := viewerHarness(t)
	ctx := context.Background()
	if _, err := c.Create(ctx, "a.jsonl", "/w"); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, hs.URL+"/s/a.jsonl/api/session", nil)
	req.Host = "pith.internal.example"
	req.Header.Set("Authorization", "Bearer admin-secret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("real host name with a token: %d, want 200", resp.StatusCode)
	}
}

// TestViewerRefusesSymlinkedSession: a session file is never a symlink —
// the gRPC calls refuse one — and the viewer refuses it too. Before, the
// viewer followed it (anywhere inside sessions.root), so a link
// team-a/link.jsonl -> ../team-b/two.jsonl showed team-b's session to a
// token for team-a/ only, which OpenSession refused it.
func TestViewerRefusesSymlinkedSession(t *testing.T) {
	tt := twoTenants(t)
	if err := os.Symlink("../team-b/two.jsonl", filepath.Join(tt.root, "team-a", "link.jsonl")); err != nil {
		t.Fatal(err)
	}
	if _, err := tt.teamA.Open(context.Background(), "team-a/link.jsonl"); err == nil {
		t.Fatal("OpenSession followed the symlink")
	}
	tt.viewerDenies(t, "team-a/link.jsonl")
}

// TestSymlinkedDirectoryIsNoWayIntoAnotherTenant: a token's prefix is
// checked on the session's name, so a directory link inside sessions.root
// — team-a/shared -> ../team-b, which os.Root follows since it stays
// inside the root — opened team-b's sessions to a token for team-a/ only,
// through the gRPC calls and the viewer alike, and let OpenSession create
// files in team-b. While tokens have prefixes, a session is reached
// through real directories only.
func TestSymlinkedDirectoryIsNoWayIntoAnotherTenant(t *testing.T) {
	tt := twoTenants(t)
	if err := os.Symlink("../team-b", filepath.Join(tt.root, "team-a", "shared")); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := tt.teamA.Open(ctx, "team-a/shared/two.jsonl"); err == nil {
		t.Error("OpenSession reached team-b's session through a directory link")
	}
	if _, err := tt.teamA.Create(ctx, "team-a/shared/planted.jsonl", "/w"); err == nil {
		t.Error("OpenSession created a session through a directory link")
	}
	if _, err := os.Lstat(filepath.Join(tt.root, "team-b", "planted.jsonl")); err == nil {
		t.Error("a file was created in team-b")
	}
	tt.viewerDenies(t, "team-a/shared/two.jsonl")
}

// tenants is a daemon with a viewer, a session of team-b holding the text
// "team-b-only", one of team-a, and a client with team-a's token.
type tenants struct {
	root  string
	hs    *httptest.Server
	teamA *client.Client
}

func twoTenants(t *testing.T) tenants {
	t.Helper()
	h, hs, c := viewerHarness(t)
	ctx := context.Background()
	s, err := c.Create(ctx, "team-b/two.jsonl", "/w")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendMessages(ctx, userMsg("team-b-only", 20)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create(ctx, "team-a/one.jsonl", "/w"); err != nil {
		t.Fatal(err)
	}
	team, err := client.Dial(h.addr, client.WithToken("team-secret"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { team.Close() })
	return tenants{root: h.srv.Config().Sessions.Root, hs: hs, teamA: team}
}

// viewerDenies checks that team-a's token reads nothing of session name
// through the viewer.
func (tt tenants) viewerDenies(t *testing.T, name string) {
	t.Helper()
	for _, api := range []string{"api/session", "api/tree"} {
		path := "/s/" + name + "/" + api
		req, _ := http.NewRequest(http.MethodGet, tt.hs.URL+path, nil)
		req.Header.Set("Authorization", "Bearer team-secret")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK || strings.Contains(string(body), "team-b-only") {
			t.Errorf("GET %s with team-a's token: %d\n%.300s", path, resp.StatusCode, body)
		}
	}
}
