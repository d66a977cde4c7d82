package pluginhost_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pith-dev/pith/hooks/pluginhost"
)

// TestLongTempDir: a TMPDIR too deep for a unix socket's 108 bytes does
// not keep plugins from starting (their sockets go under /tmp instead),
// and nothing is left in it.
func TestLongTempDir(t *testing.T) {
	long := filepath.Join(t.TempDir(), strings.Repeat("d", 80))
	if err := os.Mkdir(long, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", long)
	sup := pluginhost.NewSupervisor(spec("deep", 1, "-compact", "record"), pluginhost.Options{})
	if err := sup.Start(context.Background()); err != nil {
		t.Fatalf("start under a %d-byte TMPDIR: %v", len(long), err)
	}
	sup.Stop(context.Background())
	if left, _ := os.ReadDir(long); len(left) > 0 {
		t.Errorf("left in TMPDIR: %v", left)
	}
}
