// Package realdir makes and reaches directories under an os.Root through
// real directories only: it walks down one component at a time with
// directory file descriptors (mkdirat, openat with O_NOFOLLOW; O_PATH on
// Linux, so a directory with search but no read permission is passed), so no
// component is ever followed as a symlink, and a directory swapped for a
// link while the walk runs is refused instead of followed. os.Root's own
// MkdirAll and OpenRoot follow a link that stays inside the root, which is
// right for one user's sessions directory and wrong where a name's prefix
// decides who may reach it (pith serve's tenants).
package realdir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
)

// ErrSymlink refuses a path with a symlink where a directory should be.
var ErrSymlink = errors.New("a symlink stands where a directory should be")

// ErrNotDir refuses a path with something other than a directory (a
// file, a FIFO) where a directory should be.
var ErrNotDir = errors.New("a file stands where a directory should be")

// MkdirAll makes dir (slash-separated, relative to root) and every
// missing directory above it with perm, walking down from root through
// directory handles, and returns the FileInfo of the directory it ended
// in — the one it made or found, never one reached through a link — for
// the caller to compare what it opens next with (os.SameFile).
func MkdirAll(root *os.Root, dir string, perm fs.FileMode) (fs.FileInfo, error) {
	return walk(root, dir, perm, true)
}

// Stat walks down to dir as MkdirAll does, making nothing: a missing
// directory is fs.ErrNotExist.
func Stat(root *os.Root, dir string) (fs.FileInfo, error) {
	return walk(root, dir, 0, false)
}

// components splits dir into the names to walk, refusing "..": the walk
// stays below root by construction, not by the kernel's checks.
func components(dir string) ([]string, error) {
	var out []string
	for _, c := range strings.Split(dir, "/") {
		switch c {
		case "", ".":
			continue
		case "..":
			return nil, fmt.Errorf("%q: %w", dir, fs.ErrInvalid)
		}
		out = append(out, c)
	}
	return out, nil
}
