package store

import (
	"errors"
	"fmt"
	"strings"

	"github.com/pith-dev/pith/config"
)

// ErrInvalidName refuses a session name outside the grammar of CheckName.
var ErrInvalidName = errors.New("invalid session path")

// Limits of a session name.
const (
	maxNameBytes    = 1024
	maxSegmentBytes = 255 // NAME_MAX of common file systems
	MaxNameDepth    = 16
)

// CheckName enforces the session name grammar, the same for every store:
// path segments of [A-Za-z0-9._-] separated by "/", none empty or starting
// with a dot (so no "..", no hidden files), the last ending in ".jsonl". A
// name that passes can only mean a session file under the sessions root,
// never authorized_keys or .bashrc, and the same name addresses the same
// session in a database, so tenant prefixes and tokens work alike.
func CheckName(rel string) error {
	if rel == "" {
		return fmt.Errorf("%w: empty", ErrInvalidName)
	}
	if len(rel) > maxNameBytes {
		return fmt.Errorf("%w: longer than %d bytes", ErrInvalidName, maxNameBytes)
	}
	if strings.HasPrefix(rel, "/") {
		return fmt.Errorf("%w %q: must be relative to sessions.root", ErrInvalidName, rel)
	}
	segs := strings.Split(rel, "/")
	if len(segs) > MaxNameDepth {
		return fmt.Errorf("%w %q: more than %d levels", ErrInvalidName, rel, MaxNameDepth)
	}
	for _, seg := range segs {
		if len(seg) > maxSegmentBytes {
			return fmt.Errorf("%w %q: a name longer than %d bytes", ErrInvalidName, rel, maxSegmentBytes)
		}
		if !config.SafeSegment(seg) {
			return fmt.Errorf("%w %q: each part must be letters, digits, '.', '_' or '-', not empty and not starting with '.'", ErrInvalidName, rel)
		}
	}
	if !strings.HasSuffix(rel, ".jsonl") {
		return fmt.Errorf("%w %q: a session file name ends in .jsonl", ErrInvalidName, rel)
	}
	return nil
}
