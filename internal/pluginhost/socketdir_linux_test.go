package pluginhost_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/pith-dev/pith/internal/pluginhost"
	"golang.org/x/sys/unix"
)

// startedSocketDir starts a plugin, returns the directory its sockets got,
// stops it, and checks that the directory is gone.
func startedSocketDir(t *testing.T) string {
	t.Helper()
	sup := pluginhost.NewSupervisor(spec("sock", 1, "-compact", "record"), pluginhost.Options{})
	if err := sup.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	dir := pluginhost.SocketDir(sup)
	sup.Stop(context.Background())
	if dir == "" {
		t.Fatal("no socket directory recorded")
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("socket directory %s left after stop (%v)", dir, err)
	}
	return dir
}

// TestSocketsInRuntimeDir: without TMPDIR, the sockets go to the user's
// runtime directory, the place meant for them, which is in memory.
func TestSocketsInRuntimeDir(t *testing.T) {
	run := t.TempDir()
	if err := os.Chmod(run, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", "")
	t.Setenv("XDG_RUNTIME_DIR", run)
	if dir := startedSocketDir(t); filepath.Dir(dir) != run {
		t.Errorf("socket directory %s, want one in XDG_RUNTIME_DIR %s", dir, run)
	}
}

// TestRuntimeDirOthersMayEnterIsSkipped: a runtime directory that others
// may enter (an inherited or mistaken variable) is not used.
func TestRuntimeDirOthersMayEnterIsSkipped(t *testing.T) {
	run := t.TempDir()
	if err := os.Chmod(run, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", "")
	t.Setenv("XDG_RUNTIME_DIR", run)
	if dir := startedSocketDir(t); filepath.Dir(dir) == run {
		t.Errorf("socket directory %s made in a runtime directory of mode 0755", dir)
	}
}

// TestSocketsInSharedMemory: with neither TMPDIR nor a runtime directory,
// the sockets go to /dev/shm when it is a sticky tmpfs, not to a /tmp on
// disk, where making and removing them costs several times more.
func TestSocketsInSharedMemory(t *testing.T) {
	var st unix.Stat_t
	var fs unix.Statfs_t
	if unix.Stat("/dev/shm", &st) != nil || st.Mode&unix.S_ISVTX == 0 || st.Mode&0o003 != 0o003 ||
		unix.Statfs("/dev/shm", &fs) != nil || fs.Type != unix.TMPFS_MAGIC {
		t.Skip("/dev/shm is not a sticky tmpfs here")
	}
	t.Setenv("TMPDIR", "")
	t.Setenv("XDG_RUNTIME_DIR", "")
	if dir := startedSocketDir(t); filepath.Dir(dir) != "/dev/shm" {
		t.Errorf("socket directory %s, want one in /dev/shm", dir)
	}
}

// TestTMPDIRWinsForSockets: a TMPDIR the user set is where the sockets go,
// even with a runtime directory.
func TestTMPDIRWinsForSockets(t *testing.T) {
	run, tmp := t.TempDir(), t.TempDir()
	t.Setenv("TMPDIR", tmp)
	t.Setenv("XDG_RUNTIME_DIR", run)
	if dir := startedSocketDir(t); filepath.Dir(dir) != tmp {
		t.Errorf("socket directory %s, want one in TMPDIR %s", dir, tmp)
	}
}

// TestRuntimeDirWithoutRoomIsSkipped: a runtime directory where no
// directory can be made (here an immutable one, where even root cannot)
// is not used: the plugin still starts, with its sockets elsewhere.
func TestRuntimeDirWithoutRoomIsSkipped(t *testing.T) {
	run := t.TempDir()
	if err := os.Chmod(run, 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("chattr", "+i", run).CombinedOutput(); err != nil {
		t.Skipf("cannot make a directory immutable here: %v %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("chattr", "-i", run).Run() })
	if err := os.Mkdir(filepath.Join(run, "x"), 0o700); err == nil {
		t.Skip("an immutable directory still takes new entries here")
	}
	t.Setenv("TMPDIR", "")
	t.Setenv("XDG_RUNTIME_DIR", run)
	if dir := startedSocketDir(t); filepath.Dir(dir) == run {
		t.Errorf("socket directory %s made in a directory that takes none", dir)
	}
}
