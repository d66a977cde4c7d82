package viewer_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/pith-dev/pith/core/engine"
	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/internal/browsertest"
	"github.com/pith-dev/pith/store/files"
	"github.com/pith-dev/pith/summarize/builtin"
	"github.com/pith-dev/pith/viewer"
)

// artifactDir is where screenshots and the accessibility report go:
// $PITH_ARTIFACTS/viewer, else bin/artifacts/viewer at the repository root.
func artifactDir(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("PITH_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join("..", "bin", "artifacts")
	}
	dir = filepath.Join(dir, "viewer")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// demoWithCompaction copies the demo session and compacts it through the
// engine with the built-in summarizer, so the page has a compaction to show.
func demoWithCompaction(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "examples", "demo-session.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "demo.jsonl")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := files.Open(path, files.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	eng := engine.New(st, engine.Options{Summarizer: builtin.New(builtin.Options{}), Settings: engine.Settings{Enabled: true, ReserveTokens: 16384, KeepRecentTokens: 6000, ContextWindow: 200000}})
	if _, err := eng.Compact(context.Background(), ""); err != nil {
		t.Fatalf("compact the demo: %v", err)
	}
	return path
}

func appendUser(t *testing.T, path, text string) {
	t.Helper()
	st, err := files.Open(path, files.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	msg, _ := json.Marshal(map[string]any{"role": "user", "content": text, "timestamp": time.Now().UnixMilli()})
	if _, err := st.Append(session.Draft{Type: session.TypeMessage, Fields: map[string]json.RawMessage{"message": msg}}); err != nil {
		t.Fatal(err)
	}
}

// readmeShot saves the small screenshot the README shows (copied to
// docs/viewer.jpg by hand): a 1200×720 view as a JPEG.
func readmeShot(t *testing.T, ctx context.Context) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1200, 720)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // let the tree redraw at the new size; a picture, not an assertion
	screenshot(t, ctx, "readme.jpg")
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1400, 1000)); err != nil {
		t.Fatal(err)
	}
}

// screenshot saves the page as name: PNG for a .png name, else JPEG.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	quality := 60
	if strings.HasSuffix(name, ".png") {
		quality = 100
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(quality))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	p := filepath.Join(artifactDir(t), name)
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", p)
}

// TestBrowser opens the viewer in real headless Chromium: the tree, an entry,
// the context bars, the compaction panel, a live append, the keyboard and
// an axe-core accessibility check.
func TestBrowser(t *testing.T) {
	ctx := browsertest.Start(t, browsertest.Options{})
	path := demoWithCompaction(t)
	h, err := viewer.New(viewer.Options{Path: path, Settings: viewer.Settings{ContextWindow: 200000, ReserveTokens: 16384, AutoCompaction: true}, Debounce: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(func() { h.Close(); srv.Close() })

	must := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, actions...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	count := func(what, sel string) int {
		t.Helper()
		return evalT[int](t, ctx, what, `document.querySelectorAll(`+strconv.Quote(sel)+`).length`)
	}
	text := func(what, sel string) string {
		t.Helper()
		return evalT[string](t, ctx, what, `document.querySelector(`+strconv.Quote(sel)+`).textContent`)
	}
	poll := func(what, expr string) {
		t.Helper()
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(20*time.Second))); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}

	must("open the page", chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(`body[data-ready="1"]`), chromedp.WaitVisible(`#tree .row`))
	if n := count("the tree has rows", `#tree .row`); n < 10 {
		t.Fatalf("tree shows %d rows, want the demo's rows", n)
	}
	must("the leaf is selected", chromedp.WaitVisible(`#tree .row[aria-selected="true"] .b-leaf`))
	must("a compaction node in the tree", chromedp.WaitVisible(`#tree .row.t-compaction`))

	must("context bars", chromedp.WaitVisible(`#context-body .gauge .seg.summary`), chromedp.WaitVisible(`#context-body .gauge .threshold`))
	if n := count("context bars", `#context-body .bars li`); n < 2 {
		t.Fatalf("context lists %d messages", n)
	}
	must("the compaction panel", chromedp.WaitVisible(`#compaction-body h3`))
	panel := text("compaction panel", `#compaction-body`)
	for _, want := range []string{"tokens before", "cut point", "split turn", "files read", "Summary"} {
		if !strings.Contains(panel, want) {
			t.Errorf("compaction panel lacks %q:\n%s", want, panel)
		}
	}
	screenshot(t, ctx, "leaf.png")
	readmeShot(t, ctx)

	// Select the first user message by mouse: its content shows, and the
	// context is built at that entry.
	must("home, then click the first user message", chromedp.Focus(`#tree`), chromedp.KeyEvent(kb.Home), chromedp.WaitVisible(`#row-2`),
		chromedp.Click(`#row-2`, chromedp.NodeVisible), chromedp.WaitVisible(`#row-2[aria-selected="true"]`))
	poll("entry shown", `document.querySelector('#entry-body').textContent.includes('59fdc8cc')`)
	if s := text("entry", `#entry-body`); !strings.Contains(s, "ledger import") {
		t.Errorf("entry panel does not show the message:\n%s", s)
	}
	// The keyboard: Down moves to the assistant's answer; its tool call is
	// collapsed by default, and so is the tool output after it.
	must("arrow down", chromedp.KeyEvent(kb.ArrowDown))
	poll("assistant shown", `document.querySelector('#entry-body').textContent.includes('7ecb5f3c')`)
	if count("tool call", `#entry-body details.tool-call:not([open])`) == 0 {
		t.Error("the assistant's tool call is not shown collapsed")
	}
	must("arrow down", chromedp.KeyEvent(kb.ArrowDown))
	poll("tool output shown", `document.querySelector('#entry-body').textContent.includes('51501233')`)
	if count("tool output", `#entry-body details.tool-output:not([open])`) == 0 {
		t.Error("the tool output is not shown collapsed")
	}
	screenshot(t, ctx, "entry.png")

	// Live: an entry appended to the file appears without a reload, and the
	// page follows the leaf once it is back on it.
	must("back to the leaf", chromedp.KeyEvent("l"), chromedp.WaitVisible(`#tree .row.active .b-leaf`))
	appendUser(t, path, "live check: does the page follow?")
	poll("the appended entry appears",
		`[...document.querySelectorAll('#tree .row')].some(r => r.textContent.includes('live check') && r.getAttribute('aria-selected') === 'true')`)
	screenshot(t, ctx, "live.png")

	// Hostile content is text: markup in a message never runs or renders.
	appendUser(t, path, `<img src=x onerror="window.__pwned=1"><script>window.__pwned=1</script> hostile`)
	poll("the hostile entry appears and is selected", `document.querySelector('#entry-body').textContent.includes('onerror="window.__pwned=1"')`)
	if n := evalT[int](t, ctx, "pwned?", `(window.__pwned === undefined ? 0 : 1) + document.querySelectorAll('#entry-body img, #tree img').length`); n != 0 {
		t.Fatal("markup from the session ran or rendered in the page")
	}

	// An entry added to an earlier branch moves the rows after it down by
	// one; the keyboard goes on from the selected entry, not its old row.
	must("select an entry after the fork", chromedp.Evaluate[chromedp.Void](`selectById("85790ee4")`, chromedp.EvalAwaitPromise))
	poll("entry shown", `document.querySelector('#entry-body').textContent.includes('85790ee4')`)
	parent := "4d6d1b49" // the end of the abandoned branch, drawn before 85790ee4
	st, err := files.Open(path, files.Options{})
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := json.Marshal(map[string]any{"role": "user", "content": "a late answer on the old branch", "timestamp": time.Now().UnixMilli()})
	_, err = st.Append(session.Draft{Type: session.TypeMessage, Parent: &parent, Fields: map[string]json.RawMessage{"message": msg}})
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	poll("the new row appears", `[...document.querySelectorAll('#tree .row')].some(r => r.textContent.includes('a late answer'))`)
	must("arrow down", chromedp.Focus(`#tree`), chromedp.KeyEvent(kb.ArrowDown))
	poll("the entry after the selected one", `document.querySelector('#entry-body').textContent.includes('678747b0')`)

	t.Run("keyboard", func(t *testing.T) { keyboardReach(t, ctx) })
	t.Run("axe", func(t *testing.T) { axeCheck(t, ctx) })
}

// keyboardReach tabs through the page and checks that every control was
// focused on the way.
func keyboardReach(t *testing.T, ctx context.Context) {
	// Controls are told apart by what they say (tag, title, link, label,
	// text), not their node or whole markup: a live update that redraws
	// the tree or the entry while the keys go in replaces nodes already
	// reached, and a redraw of the selection changes their classes (a
	// loaded run missed the selected row's button that way). The walk starts after the page's
	// first control, so it does not depend on where the focus was left;
	// that control counts only once Tab has come round to it again.
	controls := evalT[int](t, ctx, "count controls", `(() => {
			const all = document.querySelectorAll('button, a[href], summary, [tabindex="0"]');
			all[0].focus();
			window.__key = n => [n.tagName, n.getAttribute('title'), n.getAttribute('href'), n.getAttribute('aria-label'), n.textContent.slice(0, 80)].join('|');
			window.__reached = new Set();
			document.addEventListener('focusin', e => window.__reached.add(window.__key(e.target)), true);
			return all.length;
		})()`)
	for i := 0; i < controls+10; i++ {
		if err := chromedp.Do(ctx, chromedp.KeyEvent(kb.Tab)); err != nil {
			t.Fatal(err)
		}
	}
	missed := evalT[[]string](t, ctx, "unreached controls", `[...document.querySelectorAll('button, a[href], summary, [tabindex="0"]')]
		.filter(n => n.offsetParent !== null && !window.__reached.has(window.__key(n)))
		.map(n => n.outerHTML.slice(0, 120))`)
	if len(missed) > 0 {
		t.Errorf("%d of %d controls not reachable with Tab: %v", len(missed), controls, missed)
	}
	t.Logf("%d controls, all reached with Tab", controls)
}

// axeCheck injects axe-core (installed with `npm ci` in testdata/a11y) and
// runs the WCAG 2 A and AA rules: labels, names, contrast, roles.
func axeCheck(t *testing.T, ctx context.Context) {
	src, err := os.ReadFile(filepath.Join("testdata", "a11y", "node_modules", "axe-core", "axe.min.js"))
	if err != nil {
		t.Skip("SKIP accessibility check: axe-core is not installed (cd viewer/testdata/a11y && npm ci)")
	}
	var res struct {
		Violations []struct {
			ID    string `json:"id"`
			Help  string `json:"help"`
			Nodes []struct {
				Target []any `json:"target"`
			} `json:"nodes"`
		} `json:"violations"`
		Incomplete []struct {
			ID    string `json:"id"`
			Nodes []struct {
				Target []any `json:"target"`
			} `json:"nodes"`
		} `json:"incomplete"`
		Passes []json.RawMessage `json:"passes"`
	}
	// Open every collapsed section first, so what they hide is checked too.
	run := `document.querySelectorAll('details').forEach(d => d.open = true);
		axe.run(document, {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']}}).then(r => JSON.stringify(r))`
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](string(src))); err != nil {
		t.Fatalf("inject axe-core: %v", err)
	}
	out, err := chromedp.Run(ctx, chromedp.Evaluate[string](run, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("run axe: %v", err)
	}
	if err := os.WriteFile(filepath.Join(artifactDir(t), "axe.json"), []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	for _, v := range res.Violations {
		t.Errorf("axe %s: %s (%d nodes, first %v)", v.ID, v.Help, len(v.Nodes), fmt.Sprint(v.Nodes[0].Target))
	}
	// axe leaves the contrast of the tree's rows undecided (they are
	// positioned inside a scrolling box); measure those itself, with the
	// WCAG formula, against the first opaque background up the tree.
	var undecided []string
	for _, v := range res.Incomplete {
		if v.ID != "color-contrast" {
			continue
		}
		for _, n := range v.Nodes {
			if len(n.Target) == 1 {
				if sel, ok := n.Target[0].(string); ok {
					undecided = append(undecided, sel)
				}
			}
		}
	}
	sels, _ := json.Marshal(undecided)
	low := evalT[[]string](t, ctx, "contrast of the undecided", `((sels) => {
		const rgb = (s) => s.match(/[\d.]+/g).map(Number);
		const lum = (c) => { const l = c.slice(0, 3).map((v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); });
			return 0.2126 * l[0] + 0.7152 * l[1] + 0.0722 * l[2]; };
		const bg = (el) => { for (; el; el = el.parentElement) { const c = rgb(getComputedStyle(el).backgroundColor); if (c.length < 4 || c[3] > 0) return c; } return [255, 255, 255]; };
		const low = [];
		for (const sel of sels) {
			const el = document.querySelector(sel);
			if (!el) continue;
			const a = lum(rgb(getComputedStyle(el).color)), b = lum(bg(el));
			const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
			if (ratio < 4.5) low.push(sel + " " + ratio.toFixed(2));
		}
		return low;
	})(`+string(sels)+`)`)
	if len(low) > 0 {
		t.Errorf("contrast below 4.5:1: %v", low)
	}
	t.Logf("axe: %d rules passed, %d violated; contrast of %d undecided elements measured, %d too low", len(res.Passes), len(res.Violations), len(undecided), len(low))
}

func evalT[T any](t *testing.T, ctx context.Context, what, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}
