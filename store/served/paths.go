package served

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"

	"github.com/pith-dev/pith/internal/realdir"
)

// realDirs refuses a session name whose directories under root include a
// symlink. os.Root follows a link that stays inside sessions.root, but a
// token's prefix is checked on the name: team-a/shared -> ../team-b would
// open team-b's sessions to a token for team-a/ (and create files there).
// So a session is reached through real directories only: internal/realdir
// walks down from the top through directory handles, never following a
// link, the same walk that makes a new session's directories (makeDirs).
// It returns the last directory's FileInfo, nil for a session at the top,
// for the caller to check the directory it then opens against (sameDir):
// one swapped in between is refused too. A missing directory is
// fs.ErrNotExist, not a pass: with nothing to compare, a link made there
// after the check would be followed by the open (a create makes its
// directories before it opens, so it finds them). Every entry point that
// opens a session by name under sessions.root calls it.
func realDirs(root *os.Root, rel string) (fs.FileInfo, error) {
	dir := path.Dir(rel)
	if dir == "." {
		return nil, nil
	}
	fi, err := realdir.Stat(root, dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no directory %q: %w", dir, fs.ErrNotExist)
	}
	if err != nil {
		return nil, realDirError(err)
	}
	return fi, nil
}

// realDirError words a refusal of internal/realdir for a client.
func realDirError(err error) error {
	switch {
	case errors.Is(err, realdir.ErrSymlink):
		return fmt.Errorf("%w: %v; sessions are reached through real directories only", ErrOutsideRoot, err)
	case errors.Is(err, realdir.ErrNotDir):
		return fmt.Errorf("%w: %v", ErrInvalidPath, err)
	}
	return rootError(err)
}

// sameDir checks that sub, the directory opened after realDirs, is the
// one realDirs checked (want nil: nothing to check).
func sameDir(sub *os.Root, want fs.FileInfo) error {
	if want == nil {
		return nil
	}
	got, err := sub.Stat(".")
	if err != nil {
		return rootError(err)
	}
	if !os.SameFile(got, want) {
		return fmt.Errorf("%w: its directory changed while it was opened", ErrOutsideRoot)
	}
	return nil
}

// rootError words an error of an os.Root operation for a client: the
// refusals os.Root reports with unexported values become this package's
// sentinels, and a *PathError loses its path (the server's).
func rootError(err error) error {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "path escapes from parent"):
		return ErrOutsideRoot
	case strings.HasSuffix(msg, "not a directory"):
		return fmt.Errorf("%w: a file stands where a directory should be", ErrInvalidPath)
	case errors.Is(err, syscall.ELOOP):
		// A symlink os.Root would not follow where a directory should be
		// (mkdir and stat do not follow the last element).
		return ErrOutsideRoot
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// unprefix drops the file name the store puts before its messages: the
// caller names the session by its full relative path instead.
func unprefix(err error, name string) error {
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, name+": "); ok {
		return &relError{msg: rest, err: err}
	}
	return err
}

// relError rewords an error and keeps what errors.Is matches.
type relError struct {
	msg string
	err error
}

func (e *relError) Error() string { return e.msg }
func (e *relError) Unwrap() error { return e.err }
