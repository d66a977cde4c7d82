package served

import (
	"os"

	"github.com/pith-dev/pith/internal/regularfile"
)

// OpenRegular opens name in root for reading, as a regular file only,
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
func (f *Files) OpenRegular(root *os.Root, name string) (*os.File, error) {
	dir, base, err := f.openDir(root, name)
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	file, err := regularfile.Open(base, os.O_RDONLY, 0, dir.Lstat, dir.OpenFile)
	if err != nil {
		return nil, RootError(err)
	}
	return file, nil
}
