package viewer_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/pith-dev/pith/internal/browsertest"
	"github.com/pith-dev/pith/internal/sessiongen"
	"github.com/pith-dev/pith/viewer"
)

// bench100k is a 100 000-entry generated session (about 110 MB, with
// branches, compactions and large tool outputs), written once per test
// binary and removed by TestMain.
func bench100k(b *testing.B) string {
	p, err := sessiongen.Shared("bench.jsonl", sessiongen.Benchmark(1, 100_000))
	if err != nil {
		b.Fatal(err)
	}
	return p
}

// firstRenderURLs are the requests the page makes before its first full
// render: the session, the compaction list, the first tree page, the
// leaf's tree page, the leaf entry and the context at the leaf.
func firstRenderURLs(h *viewer.Handler, b *testing.B) []string {
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/api/session", nil)
	req.Host = "127.0.0.1"
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		b.Fatalf("api/session: %d", rec.Code)
	}
	return []string{"/api/session", "/api/compactions", "/api/tree?offset=0&limit=200", "/api/tree?offset=99800&limit=200", "/api/entry?id=" + h.LeafID(), "/api/context"}
}

// BenchmarkOpenAPI100k: open a 100 000-entry session in the viewer and
// answer every request of the page's first render.
func BenchmarkOpenAPI100k(b *testing.B) {
	path := bench100k(b)
	b.ResetTimer()
	for b.Loop() {
		h, err := viewer.New(viewer.Options{Path: path, Settings: testSettings})
		if err != nil {
			b.Fatal(err)
		}
		for _, u := range firstRenderURLs(h, b) {
			rec := httptest.NewRecorder()
			req := httptest.NewRequest("GET", u, nil)
			req.Host = "127.0.0.1"
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusOK {
				b.Fatalf("%s: %d %s", u, rec.Code, rec.Body)
			}
		}
		h.Close()
	}
}

// BenchmarkFirstRender100k: open a 100 000-entry session in the viewer and
// render it in headless Chromium until the leaf's entry and context bars
// are on screen — what a user waits for after `pith view`.
func BenchmarkFirstRender100k(b *testing.B) {
	ctx := browsertest.Start(b, browsertest.Options{}) // skips before the 110 MB session is written
	path := bench100k(b)
	b.ResetTimer()
	for b.Loop() {
		h, err := viewer.New(viewer.Options{Path: path, Settings: testSettings})
		if err != nil {
			b.Fatal(err)
		}
		srv := httptest.NewServer(h)
		err = chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/"),
			chromedp.WaitVisible(`#tree .row.active .b-leaf`),
			chromedp.WaitVisible(`#entry-body dl`),
			chromedp.WaitVisible(`#context-body .bars li`))
		if err != nil {
			b.Fatal(err)
		}
		h.Close()
		srv.Close()
	}
}
