package session

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/pith-dev/pith/internal/regularfile"
)

// Load reads and parses a session file without keeping it open. Only a
// regular file is read (a symlink is followed to one), through a root at
// its directory, with the checks every session open gets; writing a
// session is the files store's (store/files).
func Load(path string) (*File, error) { return LoadWith(path, LoadOptions{}) }

// LoadWith is Load with options.
func LoadWith(path string, opt LoadOptions) (*File, error) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, unwrapPathError(err))
	}
	root, err := os.OpenRoot(filepath.Dir(real))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, unwrapPathError(err))
	}
	defer root.Close()
	open := func(name string, flag int, perm fs.FileMode) (*os.File, error) {
		return root.OpenFile(name, flag|regularfile.NoBlock, perm)
	}
	h, err := regularfile.Open(filepath.Base(real), os.O_RDONLY, 0, root.Lstat, open)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, regularfile.Unnamed(unwrapPathError(err)))
	}
	defer h.Close()
	st, err := h.Stat()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	data, err := readSession(h, st.Size(), opt.Mapped)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	f, err := ParseWith(data, opt.ParseOptions)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// unwrapPathError drops the *PathError wrapper, whose text repeats the path
// the caller already names.
func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
