package server

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"syscall"

	"github.com/pith-dev/pith/config"
)

// Path errors; the service maps ErrInvalidPath to InvalidArgument and
// ErrOutsideRoot to PermissionDenied.
var (
	ErrInvalidPath = errors.New("invalid session path")
	ErrOutsideRoot = errors.New("session path leads outside sessions.root")
)

// Limits of a session name.
const (
	maxNameBytes    = 1024
	maxSegmentBytes = 255 // NAME_MAX of common file systems
	maxNameDepth    = 16
)

// checkName enforces the session name grammar: path segments of
// [A-Za-z0-9._-] separated by "/", none empty or starting with a dot (so
// no "..", no hidden files), the last ending in ".jsonl". A name that
// passes can only mean a session file under sessions.root, never
// authorized_keys or .bashrc; the file system is still reached through the
// root handle, which stops symlinks leading out.
func checkName(rel string) error {
	if rel == "" {
		return fmt.Errorf("%w: empty", ErrInvalidPath)
	}
	if len(rel) > maxNameBytes {
		return fmt.Errorf("%w: longer than %d bytes", ErrInvalidPath, maxNameBytes)
	}
	if strings.HasPrefix(rel, "/") {
		return fmt.Errorf("%w %q: must be relative to sessions.root", ErrInvalidPath, rel)
	}
	segs := strings.Split(rel, "/")
	if len(segs) > maxNameDepth {
		return fmt.Errorf("%w %q: more than %d levels", ErrInvalidPath, rel, maxNameDepth)
	}
	for _, seg := range segs {
		if len(seg) > maxSegmentBytes {
			return fmt.Errorf("%w %q: a name longer than %d bytes", ErrInvalidPath, rel, maxSegmentBytes)
		}
		if !config.SafeSegment(seg) {
			return fmt.Errorf("%w %q: each part must be letters, digits, '.', '_' or '-', not empty and not starting with '.'", ErrInvalidPath, rel)
		}
	}
	if !strings.HasSuffix(rel, ".jsonl") {
		return fmt.Errorf("%w %q: a session file name ends in .jsonl", ErrInvalidPath, rel)
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
