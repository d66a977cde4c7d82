//go:build linux

package realdir

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// childRoot, in the environment, makes TestSearchOnlyDirectory the walk
// run as an unprivileged user on the tree it names.
const childRoot = "PITH_REALDIR_SEARCH_ONLY_ROOT"

// TestSearchOnlyDirectory: a directory with search but no read
// permission (0711, as home directories often are) is passed by a walk
// that only goes through it, as the Lstat walk before the descriptors
// passed it; opening it for reading was refused. Root ignores permission
// bits, so as root the walk runs in a copy of the test binary as nobody.
func TestSearchOnlyDirectory(t *testing.T) {
	if root := os.Getenv(childRoot); root != "" {
		searchOnlyWalk(t, root)
		return
	}
	dir, err := os.MkdirTemp("", "realdir-search-only-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	root := filepath.Join(dir, "root")
	if err := os.MkdirAll(filepath.Join(root, "home/team/sessions"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir, root} {
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(root, "home"), 0o711); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() != 0 {
		searchOnlyWalk(t, root)
		return
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "realdir.test")
	copyFile(t, exe, bin)
	const nobody = 65534
	// The walk makes a directory below the search-only one: nobody may
	// write in sessions/.
	if err := os.Chown(filepath.Join(root, "home/team/sessions"), nobody, nobody); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^TestSearchOnlyDirectory$", "-test.v")
	cmd.Env = append(os.Environ(), childRoot+"="+root)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestSearchOnlyDirectory") {
		t.Fatalf("the walk as nobody: %v\n%s", err, out)
	}
}

// searchOnlyWalk walks through root's search-only directory home/, as
// Stat and as MkdirAll.
func searchOnlyWalk(t *testing.T, root string) {
	t.Helper()
	if _, err := os.ReadDir(filepath.Join(root, "home")); err == nil {
		t.Fatal("home/ can be read: the test shows nothing")
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	fi, err := Stat(r, "home/team/sessions")
	if err != nil {
		t.Fatalf("Stat through a directory with search but no read permission: %v", err)
	}
	want, err := os.Stat(filepath.Join(root, "home/team/sessions"))
	if err != nil || !os.SameFile(fi, want) {
		t.Fatalf("Stat ended in %v, want home/team/sessions (%v)", fi, err)
	}
	if _, err := MkdirAll(r, "home/team/sessions/tenant", 0o755); err != nil {
		t.Fatalf("MkdirAll through a directory with search but no read permission: %v", err)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestPathDescriptorAtCalls: the walk's descriptors are O_PATH on Linux,
// opened without reading; what the walk does with them (fstatat, mkdirat,
// openat of the next one) works through them, and a link is still
// refused, not followed.
func TestPathDescriptorAtCalls(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("d", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	top, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(top)
	fd, err := openDirAt(top, "d")
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err != nil {
		t.Fatal(err)
	}
	if flags&unix.O_PATH == 0 {
		t.Fatalf("the walk opened a directory with flags %#o, not O_PATH: it needs read permission", flags)
	}
	if err := unix.Mkdirat(fd, "made", 0o755); err != nil {
		t.Fatalf("mkdirat through an O_PATH descriptor: %v", err)
	}
	var st unix.Stat_t
	if err := unix.Fstatat(fd, "made", &st, unix.AT_SYMLINK_NOFOLLOW); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		t.Fatalf("fstatat through an O_PATH descriptor: %v", err)
	}
	if _, err := openDirAt(top, "link"); !errors.Is(err, ErrSymlink) {
		t.Fatalf("a link opened with O_PATH: %v, want ErrSymlink", err)
	}
}
