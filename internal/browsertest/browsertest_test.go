package browsertest_test

import (
	"os"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/pith-dev/pith/internal/browsertest"
)

// TestStartLeavesNothing: a browser started and stopped by Start leaves
// its TMPDIR as it found it (no org.chromium.Chromium.* singleton
// directory, no profile).
func TestStartLeavesNothing(t *testing.T) {
	browsertest.Exe(t)
	tmp, err := os.MkdirTemp("", "bt")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	t.Setenv("TMPDIR", tmp) // the browser inherits it
	t.Run("browse", func(t *testing.T) {
		ctx := browsertest.Start(t, browsertest.Options{})
		if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
			t.Fatal(err)
		}
	})
	left, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range left {
		t.Errorf("left in TMPDIR: %s", e.Name())
	}
}
