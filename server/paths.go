package server

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"syscall"

	"github.com/pith-dev/pith/store"
)

// Path errors; the service maps ErrInvalidPath to InvalidArgument and
// ErrOutsideRoot to PermissionDenied.
var (
	ErrInvalidPath = store.ErrInvalidName
	ErrOutsideRoot = errors.New("session path leads outside sessions.root")
)

// checkName enforces the session name grammar; store.CheckName is the one
// place it lives, shared with every store and the CLI.
func checkName(rel string) error { return store.CheckName(rel) }

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
