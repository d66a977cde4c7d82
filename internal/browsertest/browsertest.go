// Package browsertest starts the headless Chromium that the viewer's
// browser tests drive, and stops it so that it leaves nothing behind.
//
// Chromium keeps a "process singleton" socket in a directory of its own
// under TMPDIR (org.chromium.Chromium.XXXXXX) and removes it only when it
// exits normally. Cancelling a chromedp context kills the browser with
// SIGKILL, so every test that stopped its browser that way left one such
// directory in /tmp. Start's cleanup asks the browser to close (the
// DevTools Browser.close command) and waits for the process to exit; the
// kill stays as the fallback for a browser that does not answer.
package browsertest

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// closeTimeout bounds the wait for a browser asked to close; past it the
// browser is killed (and may leave its singleton directory behind).
const closeTimeout = 30 * time.Second

// Exe finds the browser: $PITH_CHROMIUM, else Debian's chromium on the
// PATH. No browser is ever downloaded. It skips the test without one.
func Exe(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("PITH_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("SKIP browser tests: no chromium on the PATH (apt-get install chromium, or set PITH_CHROMIUM)")
	return ""
}

// Options shape the browser Start runs.
type Options struct {
	Width, Height int           // the window; 1400×1000 when zero
	Timeout       time.Duration // bounds everything the test does with the browser; 60 s when zero
}

// Start runs a headless Chromium (Exe) with a fresh profile in a test
// directory and returns its context. The browser is closed, and waited
// for, when the test ends.
func Start(t testing.TB, o Options) context.Context {
	t.Helper()
	exe := Exe(t)
	if o.Width == 0 || o.Height == 0 {
		o.Width, o.Height = 1400, 1000
	}
	if o.Timeout == 0 {
		o.Timeout = 60 * time.Second
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(o.Width, o.Height),
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	browser, cancelBrowser := chromedp.NewContext(alloc)
	// Registered after t.TempDir above, so it runs first: the profile
	// directory is removed only once the browser has exited.
	t.Cleanup(func() {
		closeCtx, cancelClose := context.WithTimeout(browser, closeTimeout)
		if err := chromedp.Cancel(closeCtx); err != nil {
			t.Logf("closing the browser: %v", err)
		}
		cancelClose()
		cancelBrowser()
		cancelAlloc()
	})
	// The first action starts the browser, which then lives as long as
	// that action's context: a deadline there would kill it (SIGKILL) when
	// it passed. So it starts under the browser's own context, with a
	// timer as the bound on a start that hangs.
	hung := time.AfterFunc(o.Timeout, cancelBrowser)
	err := chromedp.Do(browser)
	hung.Stop()
	if err != nil {
		t.Fatalf("start %s: %v", exe, err)
	}
	ctx, cancelTimeout := context.WithTimeout(browser, o.Timeout)
	t.Cleanup(cancelTimeout)
	return ctx
}
