package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/pith-dev/pith/client"
	"github.com/pith-dev/pith/config"
	"github.com/pith-dev/pith/hooks"
	"github.com/pith-dev/pith/internal/browsertest"
	"github.com/pith-dev/pith/internal/pluginhost"
	"github.com/tidwall/gjson"
)

// shot saves a screenshot under $PITH_ARTIFACTS/viewer (else
// bin/artifacts/viewer), beside the viewer package's.
func shot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv("PITH_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join("..", "..", "bin", "artifacts")
	}
	dir = filepath.Join(dir, "viewer")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", p)
}

// TestViewerBrowserServe drives the viewer of a daemon in real headless
// Chromium: sign in with a token through the form, open a session, see an
// entry appended through the Go client appear live, then run a compaction
// that the guard example plugin (a subprocess) cancels and see the run's
// hook timeline with the guard's reason in the daemon panel.
func TestViewerBrowserServe(t *testing.T) {
	browsertest.Exe(t) // skips early without a browser
	bin := filepath.Join(t.TempDir(), "guard")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/pith-dev/pith/plugins/examples/guard").CombinedOutput(); err != nil {
		t.Fatalf("build guard: %v\n%s", err, out)
	}
	cfg := testConfig(t.TempDir())
	cfg.Server.Tokens = []config.Token{{Name: "admin", SHA256: HashToken("admin-secret")}}
	h := startServerWith(t, cfg, []pluginhost.Spec{{Name: "guard", Path: bin, Priority: 1, Timeout: config.DefaultPluginTimeout, Failure: hooks.FailureOpen}})
	v := h.srv.NewViewer(false)
	hs := httptest.NewServer(v)
	t.Cleanup(func() { hs.CloseClientConnections(); hs.Close(); v.Close() })
	c := h.client
	c.Close()
	var err error
	if h.client, err = client.Dial(h.addr, client.WithToken("admin-secret")); err != nil {
		t.Fatal(err)
	}
	c = h.client

	ctx := context.Background()
	s, err := c.Create(ctx, "team/live.jsonl", "/w")
	if err != nil {
		t.Fatal(err)
	}
	var last string
	for i := range 6 {
		es, err := s.AppendMessages(ctx, userMsg(fmt.Sprintf("question %d", i), 150), assistantMsg(fmt.Sprintf("answer %d", i), 150))
		if err != nil {
			t.Fatal(err)
		}
		last = gjson.GetBytes(es[len(es)-1], "id").Str
	}

	bctx := browsertest.Start(t, browsertest.Options{Width: 1400, Height: 1100, Timeout: 90 * time.Second})
	must := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(bctx, actions...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	poll := func(what, expr string) {
		t.Helper()
		if _, err := chromedp.Run(bctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(30*time.Second))); err != nil {
			body, _ := chromedp.Run(bctx, chromedp.Evaluate[string](`document.body.innerText`))
			t.Fatalf("%s: %v\npage:\n%s", what, err, body)
		}
	}

	must("the index sends us to sign in", chromedp.Navigate(hs.URL+"/"), chromedp.WaitVisible(`#token`))
	axe(t, bctx, "login")
	must("sign in", chromedp.SendKeys(`#token`, "admin-secret"), chromedp.Submit(`#token`), chromedp.WaitVisible(`a[href="/s/team/live.jsonl/"]`))
	if u, err := chromedp.Run(bctx, chromedp.Location()); err != nil || strings.Contains(u, "secret") {
		t.Fatalf("location %q (%v): the token must not be in a URL", u, err)
	}
	if n, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.cookie.length`)); err != nil || n != 0 {
		t.Fatalf("a script can read %d bytes of cookies (%v): the token's cookie must be HttpOnly", n, err)
	}
	must("open the session", chromedp.Click(`a[href="/s/team/live.jsonl/"]`), chromedp.WaitVisible(`body[data-ready="1"]`), chromedp.WaitVisible(`#tree .row`))
	poll("the daemon panel", `!document.querySelector('#daemon').hidden && document.querySelector('#daemon-body').textContent.includes('guard')`)

	if _, err := s.AppendMessages(ctx, userMsg("appended through the client", 20)); err != nil {
		t.Fatal(err)
	}
	poll("the appended entry appears live", `[...document.querySelectorAll('#tree .row')].some(r => r.textContent.includes('appended through the client'))`)
	shot(t, bctx, "serve-live.png")

	label := fmt.Sprintf(`{"type":"label","targetId":%q,"label":"no-compact"}`, last)
	if _, err := s.AppendEntries(ctx, json.RawMessage(label)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Compact(ctx, "", nil); err == nil || !strings.Contains(err.Error(), "no-compact") {
		t.Fatalf("the guard did not cancel: %v", err)
	}
	poll("the cancelled run and its timeline", `(() => { const t = document.querySelector('#daemon-body').textContent;
		return t.includes('cancelled by plugin guard') && t.includes('session_before_compact') && t.includes('labelled "no-compact"') && t.includes('guard · 1.0.0 · running · 0 restarts'); })()`)
	if _, err := chromedp.Run(bctx, chromedp.ScrollIntoView(`#daemon`)); err != nil {
		t.Fatal(err)
	}
	shot(t, bctx, "serve-cancelled.png")
	axe(t, bctx, "session page with the daemon panel")
}

// axe runs axe-core's WCAG 2 A and AA rules in the page, when the viewer's
// test dependency is installed (cd viewer/testdata/a11y && npm ci).
func axe(t *testing.T, ctx context.Context, what string) {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "viewer", "testdata", "a11y", "node_modules", "axe-core", "axe.min.js"))
	if err != nil {
		t.Logf("SKIP accessibility check of the %s: axe-core is not installed (cd viewer/testdata/a11y && npm ci)", what)
		return
	}
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](string(src))); err != nil {
		t.Fatalf("inject axe-core: %v", err)
	}
	out, err := chromedp.Run(ctx, chromedp.Evaluate[string](`axe.run(document, {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']}}).then(r => JSON.stringify(r.violations.map(v => v.id + ': ' + v.help + ' ' + JSON.stringify(v.nodes[0].target))))`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("run axe: %v", err)
	}
	var violations []string
	if err := json.Unmarshal([]byte(out), &violations); err != nil {
		t.Fatal(err)
	}
	for _, v := range violations {
		t.Errorf("axe, %s: %s", what, v)
	}
}
