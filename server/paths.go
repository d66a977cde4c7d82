package server

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

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

// resolvePath maps a path relative to root onto the file system, refusing
// anything that could end up outside root: absolute paths, ".." elements
// and symlinks (of the file or any directory on the way) that lead out.
// With mkdir, missing directories are created (inside root, checked).
func resolvePath(root, rel string, mkdir bool) (string, error) {
	if rel == "" {
		return "", fmt.Errorf("%w: empty", ErrInvalidPath)
	}
	if filepath.IsAbs(rel) || strings.HasPrefix(rel, "/") || strings.HasPrefix(rel, `\`) {
		return "", fmt.Errorf("%w %q: must be relative to sessions.root", ErrInvalidPath, rel)
	}
	if strings.ContainsRune(rel, 0) {
		return "", fmt.Errorf("%w %q: contains a NUL byte", ErrInvalidPath, rel)
	}
	for _, el := range strings.Split(filepath.ToSlash(rel), "/") {
		if el == ".." {
			return "", fmt.Errorf("%w %q: \"..\" is not allowed", ErrInvalidPath, rel)
		}
	}
	clean := filepath.Clean(rel)
	if clean == "." {
		return "", fmt.Errorf("%w %q: names no file", ErrInvalidPath, rel)
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return "", fmt.Errorf("sessions.root %s: %w", root, err)
	}
	full := filepath.Join(realRoot, clean)
	dir := filepath.Dir(full)
	if mkdir {
		if err := mkdirInside(realRoot, dir); err != nil {
			return "", err
		}
	}
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("session %q: directory %s: %w", rel, filepath.Dir(clean), fs.ErrNotExist)
		}
		return "", fmt.Errorf("session %q: %w", rel, err)
	}
	if !inside(realRoot, realDir) {
		return "", fmt.Errorf("%w: %q", ErrOutsideRoot, rel)
	}
	target := filepath.Join(realDir, filepath.Base(full))
	// The file itself may be a symlink; follow it when it exists.
	if fi, err := os.Lstat(target); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		real, err := filepath.EvalSymlinks(target)
		if err != nil {
			return "", fmt.Errorf("session %q: %w", rel, err)
		}
		if !inside(realRoot, real) {
			return "", fmt.Errorf("%w: %q", ErrOutsideRoot, rel)
		}
		target = real
	}
	return target, nil
}

// mkdirInside creates dir and its missing parents one at a time, checking
// after each step that it did not follow a symlink out of root.
func mkdirInside(root, dir string) error {
	if !inside(root, dir) {
		return fmt.Errorf("%w: %s", ErrOutsideRoot, dir)
	}
	rel, err := filepath.Rel(root, dir)
	if err != nil || rel == "." {
		return nil
	}
	cur := root
	for _, el := range strings.Split(rel, string(filepath.Separator)) {
		cur = filepath.Join(cur, el)
		if err := os.Mkdir(cur, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("create session directory: %w", err)
		}
		real, err := filepath.EvalSymlinks(cur)
		if err != nil {
			return fmt.Errorf("create session directory: %w", err)
		}
		if !inside(root, real) {
			return fmt.Errorf("%w: %s", ErrOutsideRoot, cur)
		}
		cur = real
	}
	return nil
}

// inside reports whether p is root or below it; both are clean and real.
func inside(root, p string) bool {
	if p == root {
		return true
	}
	return strings.HasPrefix(p, strings.TrimSuffix(root, string(filepath.Separator))+string(filepath.Separator))
}
