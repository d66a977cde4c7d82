package server

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/pith-dev/pith/client"
	"github.com/pith-dev/pith/config"
	"github.com/pith-dev/pith/internal/browsertest"
)

// TestViewerBrowserLogin signs in to a daemon's viewer in real headless
// Chromium and checks what the browser keeps and sends: the cookie is an
// opaque id, not the token — Chromium sends the viewer's cookies to an
// unrelated server on another loopback port (cookies are not isolated by
// port), which received the tenant's gRPC token itself before, and now
// gets an id that grants nothing on gRPC; the index's "Sign out" ends
// access; a login past server.viewerLoginIdle is refused (sent to the
// form again).
func TestViewerBrowserLogin(t *testing.T) {
	browsertest.Exe(t) // skips early without a browser
	h, hs, c := viewerHarness(t)
	ctx := context.Background()
	if _, err := c.Create(ctx, "team-a/one.jsonl", "/w"); err != nil {
		t.Fatal(err)
	}
	// The unrelated server: what Chromium sends it.
	var (
		mu   sync.Mutex
		sent []string
	)
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		sent = append(sent, r.Header.Values("Cookie")...)
		mu.Unlock()
		_, _ = w.Write([]byte("<!doctype html><title>other</title><p id=other>another server</p>"))
	}))
	t.Cleanup(other.Close)

	bctx := browsertest.Start(t, browsertest.Options{Timeout: 90 * time.Second})
	must := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(bctx, actions...); err != nil {
			body, _ := chromedp.Run(bctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
			t.Fatalf("%s: %v\npage:\n%s", what, err, body)
		}
	}
	signIn := func() {
		t.Helper()
		must("the index sends us to sign in", chromedp.Navigate(hs.URL+"/"), chromedp.WaitVisible(`#token`))
		must("sign in", chromedp.SendKeys(`#token`, "team-secret"), chromedp.Submit(`#token`), chromedp.WaitVisible(`a[href="/s/team-a/one.jsonl/"]`))
	}
	status := func(path string) int {
		t.Helper()
		n, err := chromedp.Run(bctx, chromedp.Evaluate[int](`fetch(`+"`"+path+"`"+`).then(r => r.status)`, chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatalf("fetch %s: %v", path, err)
		}
		return n
	}

	signIn()
	res, err := chromedp.Call(bctx, network.GetCookies, network.GetCookiesParams{URLs: []string{hs.URL + "/"}})
	if err != nil {
		t.Fatal(err)
	}
	var login *network.Cookie
	for _, ck := range res.Cookies {
		if strings.Contains(ck.Value, "secret") || strings.Contains(ck.Name, "token") {
			t.Fatalf("Chromium keeps the cookie %s=%s: the token, or a cookie named like one", ck.Name, ck.Value)
		}
		if ck.Name == ViewerCookie {
			login = ck
		}
	}
	if login == nil {
		t.Fatalf("no %s cookie in %+v", ViewerCookie, res.Cookies)
	}
	if !login.HTTPOnly || login.SameSite != network.CookieSameSiteStrict || login.Path != "/" || login.Session || login.Expires <= float64(time.Now().Unix()) {
		t.Fatalf("login cookie %+v: want HttpOnly, SameSite=Strict, Path=/, with an expiry", login)
	}
	if n := status("/s/team-a/one.jsonl/api/session"); n != http.StatusOK {
		t.Fatalf("signed in, the API answers %d", n)
	}

	must("visit the unrelated server", chromedp.Navigate(other.URL+"/"), chromedp.WaitVisible(`#other`))
	mu.Lock()
	got := strings.Join(sent, "; ")
	mu.Unlock()
	if strings.Contains(got, "team-secret") {
		t.Fatalf("Chromium sent the tenant's token to another server on the host: %q", got)
	}
	// Whatever it was sent is worth nothing on the daemon's gRPC.
	for _, kv := range strings.Split(got, ";") {
		_, v, _ := strings.Cut(strings.TrimSpace(kv), "=")
		if v == "" {
			continue
		}
		gc, err := client.Dial(h.addr, client.WithToken(v))
		if err != nil {
			t.Fatal(err)
		}
		_, err = gc.Create(ctx, "team-a/stolen.jsonl", "/w")
		gc.Close()
		if !errors.Is(err, client.ErrUnauthenticated) {
			t.Fatalf("gRPC with the cookie value another server received: %v, want unauthenticated", err)
		}
	}

	must("sign out", chromedp.Navigate(hs.URL+"/"), chromedp.WaitVisible(`a[href="/s/team-a/one.jsonl/"]`),
		chromedp.Click(`form[action="/logout"] button`), chromedp.WaitVisible(`#token`))
	if n := status("/s/team-a/one.jsonl/api/session"); n != http.StatusUnauthorized {
		t.Fatalf("after signing out, the API answers %d", n)
	}
	must("after signing out the index sends us to sign in", chromedp.Navigate(hs.URL+"/"), chromedp.WaitVisible(`#token`))

	signIn()
	old := h.srv.Config()
	next := *old
	next.Server.ViewerLoginIdle = time.Nanosecond
	h.srv.ApplyConfig(config.Change{Old: old, New: &next})
	if n := status("/s/team-a/one.jsonl/api/session"); n != http.StatusUnauthorized {
		t.Fatalf("a login past server.viewerLoginIdle: the API answers %d", n)
	}
	must("an expired login is sent to sign in", chromedp.Navigate(hs.URL+"/"), chromedp.WaitVisible(`#token`))
}
