package server

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestViewerBrowserStoreAcrossHosts: in real headless Chromium, the page
// of a stored session on host B's viewer shows an entry appended through
// host A without a reload.
func TestViewerBrowserStoreAcrossHosts(t *testing.T) {
	exe := chromium(t)
	a, _, _, vb, _ := storeViewerHosts(t)
	ctx := context.Background()
	s, err := a.client.Create(ctx, "team-a/live.jsonl", "/w")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendMessages(ctx, userMsg("first question", 50), assistantMsg("first answer", 50)); err != nil {
		t.Fatal(err)
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(exe), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck, chromedp.Flag("disable-dev-shm-usage", true), chromedp.Flag("disable-background-networking", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1400, 1100))
	bctx, cancelCtx := chromedp.NewContext(alloc)
	bctx, cancelTimeout := context.WithTimeout(bctx, 90*time.Second)
	t.Cleanup(func() { cancelTimeout(); cancelCtx(); cancelAlloc() })
	if err := chromedp.Do(bctx, chromedp.Navigate(vb.URL+"/login"), chromedp.WaitVisible(`#token`),
		chromedp.SendKeys(`#token`, "team-secret"), chromedp.Submit(`#token`), chromedp.WaitVisible(`a[href="/s/team-a/live.jsonl/"]`),
		chromedp.Click(`a[href="/s/team-a/live.jsonl/"]`), chromedp.WaitVisible(`body[data-ready="1"]`), chromedp.WaitVisible(`#tree .row`)); err != nil {
		t.Fatalf("open the session on host B: %v", err)
	}
	if _, err := s.AppendMessages(ctx, userMsg("appended through host A", 20)); err != nil {
		t.Fatal(err)
	}
	expr := `[...document.querySelectorAll('#tree .row')].some(r => r.textContent.includes('appended through host A'))`
	if _, err := chromedp.Run(bctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		body, _ := chromedp.Run(bctx, chromedp.Evaluate[string](`document.body.innerText`))
		t.Fatalf("host A's append on host B's page: %v\npage:\n%s", err, body)
	}
	shot(t, bctx, "serve-store-live.png")
}
