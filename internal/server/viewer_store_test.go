package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/pith-dev/pith/viewer"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/pith-dev/pith/client"
	"github.com/pith-dev/pith/config"
	"github.com/pith-dev/pith/internal/pgtest"
	"github.com/pith-dev/pith/store"
	"github.com/pith-dev/pith/store/postgres"
)

// storeViewerHosts is two hosts on one database, each with its viewer on
// a loopback HTTP server, and the tokens of viewerHarness.
func storeViewerHosts(t *testing.T) (a, b *harness, va, vb *httptest.Server, url string) {
	t.Helper()
	url = pgtest.NewDatabase(t)
	cfg := testConfig(t.TempDir())
	cfg.Server.Tokens = []config.Token{
		{Name: "admin", SHA256: HashToken("admin-secret")},
		{Name: "team", SHA256: HashToken("team-secret"), Prefix: "team-a/"},
	}
	a, b = startStoreHost(t, cfg, url), startStoreHost(t, cfg, url)
	for _, h := range []*harness{a, b} {
		c, err := client.Dial(h.addr, client.WithToken("admin-secret"))
		if err != nil {
			t.Fatal(err)
		}
		h.client.Close()
		h.client = c // closed when the host stops
	}
	serve := func(h *harness) *httptest.Server {
		v := h.srv.NewViewer(false)
		hs := httptest.NewServer(v)
		t.Cleanup(func() {
			hs.CloseClientConnections()
			hs.Close()
			v.Close()
		})
		return hs
	}
	return a, b, serve(a), serve(b), url
}

// getAs is a GET with the token.
func getAs(t *testing.T, u, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// versionStream opens the viewer's event stream of name and returns the
// next "data:" line each time it is called.
func versionStream(t *testing.T, hs *httptest.Server, name string) func() string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, hs.URL+"/s/"+name+"/api/events", nil)
	req.Header.Set("Authorization", "Bearer admin-secret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("events of %s: %d", name, resp.StatusCode)
	}
	lines := bufio.NewScanner(resp.Body)
	return func() string {
		t.Helper()
		for lines.Scan() {
			if l := lines.Text(); strings.HasPrefix(l, "data: ") {
				return l
			}
		}
		t.Fatalf("the event stream of %s ended: %v", name, lines.Err())
		return ""
	}
}

// waitEntries reads the stream until the viewer shows n entries.
func waitEntries(t *testing.T, next func() string, n int) {
	t.Helper()
	want := fmt.Sprintf(`"entries":%d}`, n)
	for {
		l := next()
		if strings.Contains(l, want) {
			return
		}
	}
}

// TestViewerStoredSessionAcrossHosts: with the sessions in PostgreSQL, the
// viewer of host B shows a session host A writes: its API answers, an
// append through A reaches B's open event stream, and a rewrite of the
// session behind both (a prune that keeps the last line) shows too.
func TestViewerStoredSessionAcrossHosts(t *testing.T) {
	a, _, _, vb, url := storeViewerHosts(t)
	ctx := context.Background()
	const name = "team-a/live.jsonl"
	ca := a.client
	sa, err := ca.Create(ctx, name, "/w")
	if err != nil {
		t.Fatal(err)
	}
	first, err := sa.AppendMessages(ctx, userMsg("first", 20))
	if err != nil {
		t.Fatal(err)
	}
	code, body := getAs(t, vb.URL+"/s/"+name+"/api/session", "admin-secret")
	if code != http.StatusOK || !strings.Contains(body, `"entries":1`) || !strings.Contains(body, name) {
		t.Fatalf("host B's api/session: %d %s", code, body)
	}
	next := versionStream(t, vb, name)
	waitEntries(t, next, 1)
	if _, err := sa.AppendMessages(ctx, assistantMsg("second", 20), userMsg("third", 20)); err != nil {
		t.Fatal(err)
	}
	waitEntries(t, next, 3)

	// Another writer rewrites the session: the first message's text
	// changes, the last line stays. Only the store's rewrite event can
	// tell host B's viewer to read it whole.
	st, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	data, err := st.Export(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	f, err := st.Load(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	lease, err := st.AcquireLease(ctx, name, "test", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Rewrite(ctx, lease, store.LastID(f), bytes.Replace(data, []byte(`"text":"first `), []byte(`"text":"FIRST `), 1)); err != nil {
		t.Fatal(err)
	}
	var e struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(first[0], &e); err != nil || e.ID == "" {
		t.Fatalf("the first entry %s: %v", first[0], err)
	}
	next() // the version after the rewrite
	if code, body := getAs(t, vb.URL+"/s/"+name+"/api/entry?id="+e.ID, "admin-secret"); code != http.StatusOK || !strings.Contains(body, "FIRST") {
		t.Fatalf("host B's viewer after the rewrite: %d %.300s", code, body)
	}

	// And appends after the rewrite are read incrementally again.
	if _, err := sa.AppendMessages(ctx, assistantMsg("fourth", 20)); err != nil {
		t.Fatal(err)
	}
	waitEntries(t, next, 4)
}

// TestViewerStoredSessionTokens: on a shared store the viewer applies the
// tokens, prefixes and name grammar as for files: anonymous requests are
// refused, a prefix lists and opens only its sessions, a name outside the
// grammar or missing from the store is not served.
func TestViewerStoredSessionTokens(t *testing.T) {
	a, _, _, vb, _ := storeViewerHosts(t)
	ctx := context.Background()
	for _, name := range []string{"team-a/one.jsonl", "team-b/two.jsonl"} {
		s, err := a.client.Create(ctx, name, "/w")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.AppendMessages(ctx, userMsg("hello", 20)); err != nil {
			t.Fatal(err)
		}
	}
	if code, _ := getAs(t, vb.URL+"/s/team-a/one.jsonl/api/session", ""); code != http.StatusUnauthorized {
		t.Fatalf("anonymous API: %d", code)
	}
	if code, _ := getAs(t, vb.URL+"/s/team-a/one.jsonl/api/session", "wrong"); code != http.StatusUnauthorized {
		t.Fatalf("unknown token: %d", code)
	}
	code, body := getAs(t, vb.URL+"/", "team-secret")
	if code != http.StatusOK || !strings.Contains(body, "team-a/one.jsonl") || strings.Contains(body, "team-b") {
		t.Fatalf("index for team-a/: %d\n%s", code, body)
	}
	code, body = getAs(t, vb.URL+"/", "admin-secret")
	if code != http.StatusOK || !strings.Contains(body, "team-a/one.jsonl") || !strings.Contains(body, "team-b/two.jsonl") {
		t.Fatalf("index for admin: %d\n%s", code, body)
	}
	if code, _ := getAs(t, vb.URL+"/s/team-a/one.jsonl/api/session", "team-secret"); code != http.StatusOK {
		t.Fatalf("own session: %d", code)
	}
	if code, _ := getAs(t, vb.URL+"/s/team-b/two.jsonl/api/session", "team-secret"); code != http.StatusForbidden {
		t.Fatalf("another prefix's session: %d", code)
	}
	if code, _ := getAs(t, vb.URL+"/s/team-a/../team-b/two.jsonl/api/session", "team-secret"); code == http.StatusOK {
		t.Fatal("a name leaving the prefix was served")
	}
	if code, _ := getAs(t, vb.URL+"/s/..%2f..%2fetc/passwd.jsonl/api/session", "admin-secret"); code == http.StatusOK {
		t.Fatal("a name outside the grammar was served")
	}
	if code, _ := getAs(t, vb.URL+"/s/team-a/missing.jsonl/api/session", "admin-secret"); code != http.StatusNotFound {
		t.Fatalf("a session not in the store: %d", code)
	}
	if code, body := getAs(t, vb.URL+"/s/team-a/one.jsonl/api/daemon", "team-secret"); code != http.StatusOK || !strings.Contains(body, `"config"`) {
		t.Fatalf("daemon panel: %d %s", code, body)
	}
}

// TestViewerStoredSessionLimitCountsAppends: server.maxSessionBytes bounds
// what a viewer holds of a stored session that grows by appends — here
// through another host, with a larger limit of its own — as it bounds one
// read whole; a whole reading starts the count again.
func TestViewerStoredSessionLimitCountsAppends(t *testing.T) {
	a, b, _, _, _ := storeViewerHosts(t)
	ctx := context.Background()
	const name = "team-a/grow.jsonl"
	sa, err := a.client.Create(ctx, name, "/w")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sa.AppendMessages(ctx, userMsg("first", 20)); err != nil {
		t.Fatal(err)
	}
	v := b.srv.NewViewer(false)
	defer v.Close()
	src, err := v.resolveStored(name)
	if err != nil {
		t.Fatal(err)
	}
	whole, n, err := src.Tail(0)
	if err != nil {
		t.Fatal(err)
	}
	// Host B's viewer has room for the session as it is and a little
	// more, not for a large append.
	next := b.srv.cfg.Load().Clone()
	next.Server.MaxSessionBytes = len(whole) + 500
	b.srv.cfg.Store(next)
	if _, err := sa.AppendMessages(ctx, userMsg("small", 10)); err != nil {
		t.Fatal(err)
	}
	if _, n, err = src.Tail(n); err != nil {
		t.Fatalf("a small append within the limit: %v", err)
	}
	if _, err := sa.AppendMessages(ctx, userMsg("large", 400)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := src.Tail(n); !errors.Is(err, ErrLimit) {
		t.Fatalf("appends past server.maxSessionBytes read incrementally: %v, want ErrLimit", err)
	}
	next = next.Clone()
	next.Server.MaxSessionBytes = 1 << 20
	b.srv.cfg.Store(next)
	if _, _, err := src.Tail(0); err != nil {
		t.Fatalf("a whole reading under a raised limit: %v", err)
	}
}

// TestViewerStoredMissingSessionEvictsNothing: a stored name always
// "resolved" (the viewer checked only its grammar), so the fair share
// made room for a request for a session the store does not have, and
// each such 404 ended another caller's live page.
func TestViewerStoredMissingSessionEvictsNothing(t *testing.T) {
	url := pgtest.NewDatabase(t)
	cfg := testConfig(t.TempDir())
	cfg.Server.ViewerMaxSessions = 2
	cfg.Server.Tokens = []config.Token{
		{Name: "a", SHA256: HashToken("secret-a")},
		{Name: "b", SHA256: HashToken("secret-b")},
	}
	h := startStoreHost(t, cfg, url)
	c, err := client.Dial(h.addr, client.WithToken("secret-a"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	hs := httptestServer(t, h.srv.NewViewer(false))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, name := range []string{"a1.jsonl", "a2.jsonl"} {
		s, err := c.Create(ctx, name, "/w")
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Close(ctx); err != nil {
			t.Fatal(err)
		}
		// a's live page: the stream stays open until the test ends.
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, hs.URL+"/s/"+name+"/api/events", nil)
		req.Header.Set("Authorization", "Bearer secret-a")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("a's live page of %s: %d", name, resp.StatusCode)
		}
		if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
			t.Fatalf("a's live page of %s: %v", name, err)
		}
	}
	vs := h.srv.viewer.Load()
	if n := vs.Open(); n != 2 {
		t.Fatalf("%d sessions open, want a's 2", n)
	}
	// b holds none against a's two: a session b may open would take one
	// of a's slots. One the store does not have must not.
	for _, name := range []string{"missing.jsonl", "b/none.jsonl"} {
		if code, _ := getAs(t, hs.URL+"/s/"+name+"/api/tree", "secret-b"); code != http.StatusNotFound {
			t.Fatalf("b's request for %s: %d, want 404", name, code)
		}
		if n := vs.Open(); n != 2 {
			t.Fatalf("after b's 404 for %s, %d sessions open: one of a's live pages was closed for a session that does not exist", name, n)
		}
	}
}

// TestViewerStoredSessionLimitCountsRereadOnce: the viewer reads a stored
// session's appends from its last line on, to check that line is still
// where it was; the count against server.maxSessionBytes took that line
// again at every reading, so a page refreshed often enough was refused
// as too large while the session had not grown.
func TestViewerStoredSessionLimitCountsRereadOnce(t *testing.T) {
	a, b, _, _, _ := storeViewerHosts(t)
	ctx := context.Background()
	const name = "team-a/refreshed.jsonl"
	sa, err := a.client.Create(ctx, name, "/w")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sa.AppendMessages(ctx, userMsg("first", 20), userMsg("last", 2000)); err != nil {
		t.Fatal(err)
	}
	v := b.srv.NewViewer(false)
	defer v.Close()
	src, err := v.resolveStored(name)
	if err != nil {
		t.Fatal(err)
	}
	whole, n, err := src.Tail(0)
	if err != nil {
		t.Fatal(err)
	}
	next := b.srv.cfg.Load().Clone()
	next.Server.MaxSessionBytes = 2 * len(whole)
	b.srv.cfg.Store(next)
	for i := range 10 {
		// What a Refresh reads when nothing was appended: the last line.
		if _, _, err := src.Tail(n - 1); err != nil {
			t.Fatalf("reading %d of an unchanged session: %v", i+1, err)
		}
	}
	if _, err := sa.AppendMessages(ctx, userMsg("small", 10)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := src.Tail(n - 1); err != nil {
		t.Fatalf("a small append within the limit: %v", err)
	}
}

// TestViewerStoredSessionSizedBeforeRead: resolving a stored session asks
// the store its size without reading it: one over server.maxSessionBytes
// is refused there, before the viewer makes room or reads a byte, and one
// within it tells its size, for which the viewer makes room before its
// first reading.
func TestViewerStoredSessionSizedBeforeRead(t *testing.T) {
	a, b, _, _, _ := storeViewerHosts(t)
	ctx := context.Background()
	const name = "team-a/sized.jsonl"
	sa, err := a.client.Create(ctx, name, "/w")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sa.AppendMessages(ctx, userMsg("some text", 200)); err != nil {
		t.Fatal(err)
	}
	v := b.srv.NewViewer(false)
	defer v.Close()
	src, err := v.resolveStored(name)
	if err != nil {
		t.Fatal(err)
	}
	whole, _, err := src.Tail(0)
	if err != nil {
		t.Fatal(err)
	}
	if src.Size != int64(len(whole)) {
		t.Fatalf("resolved size %d, the session holds %d bytes", src.Size, len(whole))
	}
	next := b.srv.cfg.Load().Clone()
	next.Server.MaxSessionBytes = len(whole) - 1
	b.srv.cfg.Store(next)
	if _, err := v.resolveStored(name); !errors.Is(err, ErrLimit) || !errors.Is(err, viewer.ErrLargerThanBudget) {
		t.Fatalf("a session over the limit resolved: %v", err)
	}
	if _, _, err := src.Tail(0); !errors.Is(err, ErrLimit) {
		t.Fatalf("a whole reading over the limit: %v, want ErrLimit", err)
	}
}
