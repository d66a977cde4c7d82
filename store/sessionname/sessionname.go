// Package sessionname is the grammar of a session's name, the same in
// every store and in the configuration (a token's session-path prefix):
// a leaf, so that the configuration can check a prefix without linking a
// store.
package sessionname

import (
	"errors"
	"fmt"
	"strings"
)

// ErrInvalid refuses a session name outside the grammar of Check.
var ErrInvalid = errors.New("invalid session path")

// Limits of a session name.
const (
	maxNameBytes    = 1024
	maxSegmentBytes = 255 // NAME_MAX of common file systems
	MaxDepth        = 16
)

// Check enforces the session name grammar, the same for every store:
// path segments of [A-Za-z0-9._-] separated by "/", none empty or starting
// with a dot (so no "..", no hidden files), the last ending in ".jsonl". A
// name that passes can only mean a session file under the sessions root,
// never authorized_keys or .bashrc, and the same name addresses the same
// session in a database, so tenant prefixes and tokens work alike.
func Check(rel string) error {
	if rel == "" {
		return fmt.Errorf("%w: empty", ErrInvalid)
	}
	if len(rel) > maxNameBytes {
		return fmt.Errorf("%w: longer than %d bytes", ErrInvalid, maxNameBytes)
	}
	if strings.HasPrefix(rel, "/") {
		return fmt.Errorf("%w %q: must be relative to sessions.root", ErrInvalid, rel)
	}
	segs := strings.Split(rel, "/")
	if len(segs) > MaxDepth {
		return fmt.Errorf("%w %q: more than %d levels", ErrInvalid, rel, MaxDepth)
	}
	for _, seg := range segs {
		if len(seg) > maxSegmentBytes {
			return fmt.Errorf("%w %q: a name longer than %d bytes", ErrInvalid, rel, maxSegmentBytes)
		}
		if !SafeSegment(seg) {
			return fmt.Errorf("%w %q: each part must be letters, digits, '.', '_' or '-', not empty and not starting with '.'", ErrInvalid, rel)
		}
	}
	if !strings.HasSuffix(rel, ".jsonl") {
		return fmt.Errorf("%w %q: a session file name ends in .jsonl", ErrInvalid, rel)
	}
	return nil
}

// SafePrefix reports whether p is a token's session-path prefix: one or
// more directory names of the session name grammar, each followed by "/".
func SafePrefix(p string) bool {
	if !strings.HasSuffix(p, "/") {
		return false
	}
	for _, seg := range strings.Split(strings.TrimSuffix(p, "/"), "/") {
		if !SafeSegment(seg) {
			return false
		}
	}
	return true
}

// SafeSegment reports whether seg is one element of a session name:
// [A-Za-z0-9._-], not empty, not starting with a dot (no "..", no hidden
// files).
func SafeSegment(seg string) bool {
	if seg == "" || seg[0] == '.' {
		return false
	}
	for i := 0; i < len(seg); i++ {
		c := seg[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
