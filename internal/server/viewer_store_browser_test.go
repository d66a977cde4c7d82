package server

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/pith-dev/pith/internal/browsertest"
)

// TestViewerBrowserStoreAcrossHosts: in real headless Chromium, the page
// of a stored session on host B's viewer shows an entry appended through
// host A without a reload.
func TestViewerBrowserStoreAcrossHosts(t *testing.T) {
	browsertest.Exe(t) // skips early without a browser
	a, _, _, vb, _ := storeViewerHosts(t)
	ctx := context.Background()
	s, err := a.client.Create(ctx, "team-a/live.jsonl", "/w")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendMessages(ctx, userMsg("first question", 50), assistantMsg("first answer", 50)); err != nil {
		t.Fatal(err)
	}
	bctx := browsertest.Start(t, browsertest.Options{Width: 1400, Height: 1100, Timeout: 90 * time.Second})
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
