package server

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/pith-dev/pith/client"
	"github.com/pith-dev/pith/config"
	"github.com/pith-dev/pith/internal/signin"
)

// signIn posts token to the login form of hs with b and returns the
// login cookie the answer set.
func signIn(t *testing.T, b *http.Client, hs *httptest.Server, token string) *http.Cookie {
	t.Helper()
	once := *b // the same cookie jar; the answer itself, not where it leads
	once.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := once.PostForm(hs.URL+"/login", url.Values{"token": {token}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("login: %d", resp.StatusCode)
	}
	for _, c := range resp.Cookies() {
		if c.Name == ViewerCookie {
			return c
		}
	}
	t.Fatalf("login set no %s cookie: %q", ViewerCookie, resp.Header.Values("Set-Cookie"))
	return nil
}

// postLogout signs b out, as the index's button does (same origin).
func postLogout(t *testing.T, b *http.Client, hs *httptest.Server, origin string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, hs.URL+"/logout", nil)
	if origin != "" {
		req.Header.Set("Origin", origin)
		req.Header.Set("Sec-Fetch-Site", map[bool]string{true: "same-origin", false: "cross-site"}[origin == hs.URL])
	}
	resp, err := b.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestViewerLoginIsNotTheToken: the viewer's cookie was the bearer token
// itself (pith_token=<token>, no expiry), and cookies are not isolated by
// port: the browser handed the tenant's gRPC credential to any server on
// the host. The cookie is now an opaque random id kept by the daemon:
// not the token, nothing derived from it, expiring, HttpOnly,
// SameSite=Strict, Path=/; presented as a gRPC bearer token it grants
// nothing; a logout (a same-origin POST) ends it.
func TestViewerLoginIsNotTheToken(t *testing.T) {
	h, hs, c := viewerHarness(t)
	ctx := context.Background()
	if _, err := c.Create(ctx, "team-a/one.jsonl", "/w"); err != nil {
		t.Fatal(err)
	}
	page := hs.URL + "/s/team-a/one.jsonl/api/session"
	b := browser(t)
	b.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	cookie := signIn(t, b, hs, "team-secret")
	if cookie.Value == "team-secret" || strings.Contains(cookie.Value, "secret") || cookie.Value == HashToken("team-secret") || len(cookie.Value) < 43 {
		t.Fatalf("the login cookie is %q: it must be an opaque random id, not the token", cookie.Value)
	}
	if strings.Contains(strings.ToLower(cookie.Name), "token") {
		t.Fatalf("cookie name %q looks like a token", cookie.Name)
	}
	if !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode || cookie.Path != "/" || cookie.MaxAge <= 0 || cookie.MaxAge > int(config.DefaultViewerLoginMaxAge.Seconds()) {
		t.Fatalf("login cookie %+v: want HttpOnly, SameSite=Strict, Path=/, expiring within server.viewerLoginMaxAge", cookie)
	}
	if code, _ := get(t, b, page); code != http.StatusOK {
		t.Fatalf("signed in: %d", code)
	}

	// The id grants nothing on the daemon's gRPC.
	gc, err := client.Dial(h.addr, client.WithToken(cookie.Value))
	if err != nil {
		t.Fatal(err)
	}
	defer gc.Close()
	if _, err := gc.Create(ctx, "team-a/by-cookie.jsonl", "/w"); !errors.Is(err, client.ErrUnauthenticated) {
		t.Fatalf("gRPC with the login id as a bearer token: %v, want unauthenticated", err)
	}

	// Another site cannot sign the browser out; the viewer's own page can.
	if code := postLogout(t, b, hs, "https://evil.example"); code != http.StatusForbidden {
		t.Fatalf("cross-site logout: %d, want 403", code)
	}
	if code, _ := get(t, b, page); code != http.StatusOK {
		t.Fatalf("after a refused cross-site logout: %d", code)
	}
	if code := postLogout(t, b, hs, hs.URL); code != http.StatusSeeOther {
		t.Fatalf("logout: %d", code)
	}
	if code, _ := get(t, b, page); code != http.StatusUnauthorized {
		t.Fatalf("after logout: %d, want 401", code)
	}
	// The id kept by someone else (another server it was sent to) is dead
	// too: the login ended in the daemon, not only in this browser.
	replay, _ := http.NewRequest(http.MethodGet, page, nil)
	replay.AddCookie(&http.Cookie{Name: ViewerCookie, Value: cookie.Value})
	resp, err := http.DefaultClient.Do(replay)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the id replayed after logout: %d, want 401", resp.StatusCode)
	}
}

// TestViewerLoginExpiresAndFollowsTheTokens: a login ends after
// server.viewerLoginIdle without use and after server.viewerLoginMaxAge
// whatever its use (a reload applies to the logins there are), and when a
// reload removes its token — for good: the same token configured again
// does not bring it back.
func TestViewerLoginExpiresAndFollowsTheTokens(t *testing.T) {
	h, hs, c := viewerHarness(t)
	ctx := context.Background()
	if _, err := c.Create(ctx, "team-a/one.jsonl", "/w"); err != nil {
		t.Fatal(err)
	}
	page := hs.URL + "/s/team-a/one.jsonl/api/session"
	apply := func(edit func(*config.Server)) {
		t.Helper()
		old := h.srv.Config()
		next := *old
		next.Server.Tokens = append([]config.Token(nil), old.Server.Tokens...)
		edit(&next.Server)
		h.srv.ApplyConfig(config.Change{Old: old, New: &next})
	}
	for _, tc := range []struct {
		what string
		edit func(*config.Server)
	}{
		{"idle", func(s *config.Server) { s.ViewerLoginIdle = time.Nanosecond }},
		{"absolute age", func(s *config.Server) { s.ViewerLoginMaxAge = time.Nanosecond }},
	} {
		b := browser(t)
		signIn(t, b, hs, "team-secret")
		if code, _ := get(t, b, page); code != http.StatusOK {
			t.Fatalf("%s: signed in: %d", tc.what, code)
		}
		apply(tc.edit)
		if code, _ := get(t, b, page); code != http.StatusUnauthorized {
			t.Fatalf("a login past its %s: %d, want 401", tc.what, code)
		}
		apply(func(s *config.Server) {
			s.ViewerLoginIdle, s.ViewerLoginMaxAge = config.DefaultViewerLoginIdle, config.DefaultViewerLoginMaxAge
		})
		if code, _ := get(t, b, page); code != http.StatusUnauthorized {
			t.Fatalf("a login that expired came back when the limit was raised (%s): %d", tc.what, code)
		}
	}

	b := browser(t)
	signIn(t, b, hs, "team-secret")
	team := h.srv.Config().Server.Tokens[1]
	apply(func(s *config.Server) { s.Tokens = s.Tokens[:1] }) // team's token revoked
	if code, _ := get(t, b, page); code != http.StatusUnauthorized {
		t.Fatalf("a login of a revoked token: %d, want 401", code)
	}
	apply(func(s *config.Server) { s.Tokens = append(s.Tokens, team) })
	if code, _ := get(t, b, page); code != http.StatusUnauthorized {
		t.Fatalf("a login of a revoked token came back with the token: %d, want 401", code)
	}
}

// TestViewerLoginsBounded: a client posting the login form with a valid
// token in a loop holds at most signin.MaxPerSubject logins — memory does
// not grow with the loop — and ends only its own, never another tenant's.
func TestViewerLoginsBounded(t *testing.T) {
	_, hs, c := viewerHarness(t)
	ctx := context.Background()
	if _, err := c.Create(ctx, "team-a/one.jsonl", "/w"); err != nil {
		t.Fatal(err)
	}
	victim := browser(t)
	signIn(t, victim, hs, "admin-secret")
	loop := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for range 3 * signin.MaxPerSubject {
		signIn(t, loop, hs, "team-secret")
	}
	if code, _ := get(t, victim, hs.URL+"/s/team-a/one.jsonl/api/session"); code != http.StatusOK {
		t.Fatalf("another tenant's login loop ended the victim's login: %d", code)
	}
	if n := viewerOf(t, hs).logins.Len(); n != signin.MaxPerSubject+1 {
		t.Fatalf("%d logins held after a loop of %d, want %d", n, 3*signin.MaxPerSubject, signin.MaxPerSubject+1)
	}
}

func viewerOf(t *testing.T, hs *httptest.Server) *Viewer {
	t.Helper()
	v, ok := hs.Config.Handler.(*Viewer)
	if !ok {
		t.Fatalf("%T is no *Viewer", hs.Config.Handler)
	}
	return v
}
