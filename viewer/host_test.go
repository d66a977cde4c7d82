package viewer_test

import (
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/pith-dev/pith/viewer"
)

// TestLoopbackHostBothFamilies: the Host check (the one of pith view and
// of the daemon's viewer) accepts the loopback literals of both families,
// with and without a port — a browser sends "[::1]" on a default port —
// and still refuses every name that DNS could rebind.
func TestLoopbackHostBothFamilies(t *testing.T) {
	for host, want := range map[string]bool{
		"127.0.0.1": true, "127.0.0.1:7421": true,
		"[::1]": true, "[::1]:7421": true, "[0:0:0:0:0:0:0:1]": true,
		"localhost": true, "localhost:7421": true, "LocalHost:7421": true,
		"evil.example": false, "evil.example:7421": false, "localhost.evil.example": false,
		"[::1": false, "[evil.example]": false, "[evil.example]:80": false, "": false,
	} {
		if got := viewer.LoopbackHost(host); got != want {
			t.Errorf("LoopbackHost(%q) = %v, want %v", host, got, want)
		}
	}
}

// TestViewerOnIPv6Loopback serves pith view's handler on [::1] and asks
// it under the Host headers a browser sends there.
func TestViewerOnIPv6Loopback(t *testing.T) {
	ln, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback here: %v", err)
	}
	h, err := viewer.New(viewer.Options{Path: filepath.Join("..", "examples", "demo-session.jsonl"), Settings: testSettings})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Listener = ln
	srv.Start()
	t.Cleanup(func() { srv.Close(); h.Close() })
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	for host, want := range map[string]int{"[::1]": http.StatusOK, "[::1]:" + port: http.StatusOK, "rebind.example:" + port: http.StatusMisdirectedRequest} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/api/session", nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Host %q: %d, want %d", host, resp.StatusCode, want)
		}
	}
}
