package files

import (
	"errors"
	"io/fs"
	"os"
	"time"

	"github.com/pith-dev/pith/core/session"
)

// OpenOrCreateIn opens the session file name in dir, or with create makes
// it first when it is missing (a fresh header with cwd); created says
// which. A file that exists but has no header yet is being created by
// another writer (this process, or pi): it is read again, with doubling
// waits, until it has one — one still empty after them was left so by a
// creation that died, and is refused as it is (session.ErrNotSession).
func OpenOrCreateIn(dir *os.Root, name string, create bool, cwd string, opts Options) (s *Session, created bool, err error) {
	open := func() (*Session, error) {
		s, err := OpenIn(dir, name, opts)
		if create && errors.Is(err, session.ErrNotSession) {
			// Another call (of this daemon, or pi) may be creating it:
			// the file exists before its header is written. Read it
			// again, and again while it was empty when that read began:
			// its size taken after a failed read could be the header's,
			// landed just after the read, and hide that the refusal
			// was only the creation under way.
			for wait := time.Millisecond; wait <= maxCreateWait; wait *= 2 {
				time.Sleep(wait)
				wasEmpty := emptyFile(dir, name)
				if s, err = OpenIn(dir, name, opts); !wasEmpty || !errors.Is(err, session.ErrNotSession) {
					break
				}
			}
		}
		return s, err
	}
	s, err = open()
	if !create || !errors.Is(err, fs.ErrNotExist) {
		return s, false, err
	}
	s, err = CreateIn(dir, name, cwd, opts)
	if errors.Is(err, fs.ErrExist) {
		// Another process created it first.
		s, err = open()
		return s, false, err
	}
	return s, err == nil, err
}

// maxCreateWait bounds the last of the doubling waits (about a second in
// all) for a session file another caller is creating to get its header.
const maxCreateWait = 512 * time.Millisecond

// emptyFile reports whether name in dir is an empty regular file.
func emptyFile(dir *os.Root, name string) bool {
	fi, err := dir.Lstat(name)
	return err == nil && fi.Mode().IsRegular() && fi.Size() == 0
}
