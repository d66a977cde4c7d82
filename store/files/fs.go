package files

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/pith-dev/pith/internal/regularfile"
)

// FS is the one directory a Session works in. Every file operation of a
// Session — on the session file, its temp files and its sidecars — goes
// through it with names relative to that directory, so that one
// implementation decides what a name may reach (RootFS: nothing outside
// the directory, whatever symlinks or ".." say) and tests can fail any
// single operation (internal/faultfs).
type FS interface {
	// OpenFile opens name with os.OpenFile's flags and permissions.
	OpenFile(name string, flag int, perm fs.FileMode) (Handle, error)
	Rename(oldname, newname string) error
	Remove(name string) error
	Stat(name string) (fs.FileInfo, error)
	Lstat(name string) (fs.FileInfo, error)
	// ReadDir lists the names in the directory.
	ReadDir() ([]string, error)
	// SyncDir fsyncs the directory, making a rename or a new name durable.
	SyncDir() error
}

// Handle is an open file of an FS.
type Handle interface {
	io.ReaderAt
	io.Writer
	// WriteAt is pwrite; only for a handle opened without O_APPEND (the
	// append intent record, see intent.go).
	io.WriterAt
	Stat() (fs.FileInfo, error)
	Sync() error
	Truncate(size int64) error
	Chmod(mode fs.FileMode) error
	// Lock takes an advisory whole-file lock, exclusive or shared, waiting
	// for it; Unlock releases it. pi's own appends take no lock.
	Lock(exclusive bool) error
	Unlock() error
	Close() error
}

// RootFS is the production FS: an *os.Root, which resolves every name
// inside its directory and refuses symlinks and ".." that lead out of it.
type RootFS struct{ Root *os.Root }

// NewRootFS returns an FS over an opened root. The caller keeps ownership
// of root and closes it after the last Session using it.
func NewRootFS(root *os.Root) RootFS { return RootFS{Root: root} }

func (r RootFS) OpenFile(name string, flag int, perm fs.FileMode) (Handle, error) {
	f, err := r.Root.OpenFile(name, flag|regularfile.NoBlock, perm)
	if err != nil {
		return nil, err
	}
	return osHandle{f}, nil
}

func (r RootFS) Rename(oldname, newname string) error   { return r.Root.Rename(oldname, newname) }
func (r RootFS) Remove(name string) error               { return r.Root.Remove(name) }
func (r RootFS) Stat(name string) (fs.FileInfo, error)  { return r.Root.Stat(name) }
func (r RootFS) Lstat(name string) (fs.FileInfo, error) { return r.Root.Lstat(name) }

func (r RootFS) ReadDir() ([]string, error) {
	d, err := r.Root.Open(".")
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.Readdirnames(-1)
}

func (r RootFS) SyncDir() error {
	d, err := r.Root.Open(".")
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

type osHandle struct{ *os.File }

func (h osHandle) Lock(exclusive bool) error { return lockFile(h.File, exclusive) }
func (h osHandle) Unlock() error             { return unlockFile(h.File) }

// ErrNotRegular refuses to open anything but a regular file as a session:
// a FIFO would block forever, a device would be read without end, and a
// symlink inside a root is not followed (Open resolves links first). It
// is internal/regularfile's sentinel, so a refusal by any entry point
// (the viewer, the server) matches it too.
var ErrNotRegular = regularfile.ErrNotRegular

// ErrHardLinked refuses to rewrite a file with more than one name: a
// rewrite replaces one name and the others would keep the old content.
var ErrHardLinked = errors.New("the session file has more than one hard link")

// resolve turns a session path given on the command line into the
// directory to root at and the name inside it: a symlink is followed to
// its target, so a rewrite replaces the target and the link stays.
func resolve(path string) (dir, name string, err error) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", "", unwrapPathError(err)
	}
	return filepath.Dir(real), filepath.Base(real), nil
}

// openRoot opens the directory of a resolved session path.
func openRoot(path string) (*os.Root, string, error) {
	dir, name, err := resolve(path)
	if err != nil {
		return nil, "", err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, "", unwrapPathError(err)
	}
	return root, name, nil
}

// openRegular opens name in fsys as a regular file only, through the one
// mechanism every entry point uses (internal/regularfile: without
// blocking, decided on the opened file). fsys.Lstat is the check before
// opening, so a symlink in the directory is refused, not followed. The
// refusal is worded without the name: callers name the session by the
// path the user knows.
func openRegular(fsys FS, name string, flag int) (Handle, error) {
	h, err := regularfile.Open(name, flag, 0, fsys.Lstat, fsys.OpenFile)
	if err != nil {
		return nil, regularfile.Unnamed(unwrapPathError(err))
	}
	return h, nil
}

// readAll reads the first size bytes of h.
func readAll(h Handle, size int64) ([]byte, error) { return readRange(h, 0, size) }

// readRange reads the n bytes of h from off: all of them, or an error (a
// file cut shorter under the read is not zero bytes).
func readRange(h Handle, off, n int64) ([]byte, error) {
	data := make([]byte, n)
	got, err := h.ReadAt(data, off)
	if err != nil && !(errors.Is(err, io.EOF) && int64(got) == n) {
		return nil, err
	}
	return data, nil
}
