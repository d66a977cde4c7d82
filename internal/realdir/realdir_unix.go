//go:build unix

package realdir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"

	"golang.org/x/sys/unix"
)

// afterStep, when set (tests), runs after each component is reached,
// with the path reached so far: the place where a swap would land.
var afterStep func(done string)

func walk(root *os.Root, dir string, perm fs.FileMode, create bool) (fs.FileInfo, error) {
	names, err := components(dir)
	if err != nil {
		return nil, err
	}
	d, err := root.Open(".")
	if err != nil {
		return nil, err
	}
	defer d.Close()
	// The directories on the way are held as bare descriptors (an
	// *os.File each cost a third of the walk); only the last becomes one,
	// for its FileInfo.
	at, held := int(d.Fd()), -1
	defer func() {
		if held >= 0 {
			unix.Close(held)
		}
	}()
	// done names the path so far, for errors and the test hook only.
	done := func(i int) string { return path.Join(names[:i+1]...) }
	for i, name := range names {
		if create {
			if err := unix.Mkdirat(at, name, uint32(perm.Perm())); err != nil && !errors.Is(err, unix.EEXIST) {
				return nil, &fs.PathError{Op: "mkdir", Path: done(i), Err: err}
			}
		}
		next, err := openDirAt(at, name)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", done(i), err)
		}
		if held >= 0 {
			unix.Close(held)
		}
		at, held = next, next
		if afterStep != nil {
			afterStep(done(i))
		}
	}
	if held < 0 {
		return d.Stat()
	}
	last := os.NewFile(uintptr(held), dir)
	held = -1
	defer last.Close()
	return last.Stat()
}

// openDirAt opens the directory name in the directory fd without
// following a link, and words why it cannot.
func openDirAt(fd int, name string) (int, error) {
	for {
		next, err := unix.Openat(fd, name, walkFlags, 0)
		if err == nil {
			return next, nil
		}
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
			var st unix.Stat_t
			if unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
				return -1, ErrSymlink
			}
			return -1, ErrNotDir
		}
		if errors.Is(err, unix.ENOENT) {
			return -1, fs.ErrNotExist
		}
		return -1, err
	}
}
