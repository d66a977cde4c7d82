package served

import (
	"os"
	"path/filepath"

	"github.com/pith-dev/pith/core/compaction"
	"github.com/pith-dev/pith/internal/regularfile"
)

// openRegular opens name in root for reading, as a regular file only,
// through the mechanism every entry point uses (internal/regularfile):
// a FIFO in the place of a session or its archive must not hang the
// viewer, nor a device be read. The check is Lstat, as core/session's
// for the gRPC calls: a symlink in the place of a session is refused, not
// followed — a token's prefix is checked on the name, and a link in one
// tenant's directory may point into another's.
//
// Its directories are checked on every open (checkDirs), not only when
// the session was first resolved: the viewer opens it again at every
// change.
//
// The file is opened in its directory as the gRPC calls open it
// (openDir), so a directory swapped for a link between the check and the
// open is refused; regularfile.Open refuses a file swapped for one.
func (f *Files) openRegular(root *os.Root, name string) (*os.File, error) {
	dir, base, err := f.openDir(root, name)
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	file, err := regularfile.Open(base, os.O_RDONLY, 0, dir.Lstat, dir.OpenFile)
	if err != nil {
		return nil, rootError(err)
	}
	return file, nil
}

// Located is a session file found for reading: where it is, how large it
// was when found, and how to open it and its prune archive, as regular
// files only (openRegular), every time through the root it was found
// under.
type Located struct {
	// Path is the file's absolute path, for a file watch only.
	Path string
	Size int64
	// Open and OpenArchive open the session and its archive again.
	Open, OpenArchive func() (*os.File, error)
}

// Locate finds the session file name (a name the grammar accepts) for
// reading, as the viewer does.
func (f *Files) Locate(name string) (Located, error) {
	root, at, err := f.sessionsRoot(false)
	if err != nil {
		return Located{}, err
	}
	st, err := root.Lstat(name)
	if err != nil {
		return Located{}, rootError(err)
	}
	return Located{
		Path:        filepath.Join(at, filepath.FromSlash(name)),
		Size:        st.Size(),
		Open:        func() (*os.File, error) { return f.openRegular(root, name) },
		OpenArchive: func() (*os.File, error) { return f.openRegular(root, compaction.ArchivePath(name)) },
	}, nil
}
