//go:build !unix

package realdir

import (
	"fmt"
	"io/fs"
	"os"
	"path"
)

// walk without directory handles: each component is checked with Lstat
// from the top and made with Mkdir. A swap between the check and the use
// is not caught here; the caller's comparison of what it opens with the
// FileInfo returned still is.
func walk(root *os.Root, dir string, perm fs.FileMode, create bool) (fs.FileInfo, error) {
	names, err := components(dir)
	if err != nil {
		return nil, err
	}
	done := "."
	fi, err := root.Lstat(".")
	if err != nil {
		return nil, err
	}
	for _, name := range names {
		done = path.Join(done, name)
		if create {
			if err := root.Mkdir(done, perm); err != nil && !os.IsExist(err) {
				return nil, err
			}
		}
		fi, err = root.Lstat(done)
		if err != nil {
			return nil, err
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			return nil, fmt.Errorf("%q: %w", done, ErrSymlink)
		case !fi.IsDir():
			return nil, fmt.Errorf("%q: %w", done, ErrNotDir)
		}
	}
	return fi, nil
}
