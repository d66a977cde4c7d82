package pluginhost_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pith-dev/pith/internal/pluginhost"
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

// TestFailedExecLeavesNoSocketDir: a plugin that cannot be executed leaves
// nothing in TMPDIR (go-plugin makes its socket directory before the
// exec, and removes it only for a process that started).
func TestFailedExecLeavesNoSocketDir(t *testing.T) {
	tmp, err := os.MkdirTemp("", "pt")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	notExec := filepath.Join(t.TempDir(), "plugin")
	if err := os.WriteFile(notExec, []byte("not a program"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", tmp)
	sp := spec("broken", 1)
	sp.Path = notExec
	sup := pluginhost.NewSupervisor(sp, pluginhost.Options{})
	if err := sup.Start(context.Background()); err == nil {
		t.Fatal("a file that is not executable started")
	}
	sup.Stop(context.Background())
	if left, _ := os.ReadDir(tmp); len(left) > 0 {
		t.Errorf("left in TMPDIR: %v", left)
	}
}
