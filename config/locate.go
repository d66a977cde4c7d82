package config

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// PathEnv names the configuration file when no --config is given.
const PathEnv = "PITH_CONFIG"

// ErrNotFound is wrapped by the error of a configuration file that does
// not exist. Such a file was named by the user (--config or PITH_CONFIG;
// the default location is read only when it exists), so a command reports
// it as a usage error, not as a failure of its own.
var ErrNotFound = errors.New("configuration file not found")

// notFound marks err as ErrNotFound when it says the file does not exist,
// keeping its message (which names the file) as it is.
func notFound(err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return notFoundError{err}
	}
	return err
}

type notFoundError struct{ err error }

func (e notFoundError) Error() string   { return e.err.Error() }
func (e notFoundError) Unwrap() []error { return []error{e.err, ErrNotFound} }

// Locate returns the configuration file a command reads, first found of:
// flag (--config), $PITH_CONFIG when set, the default location
// (DefaultPath) when a file is there; else "" for the built-in defaults.
// A file named by flag or PITH_CONFIG must exist (Load says ErrNotFound);
// the default location is only a place to look.
func Locate(flag string) string {
	if flag != "" {
		return flag
	}
	if p := os.Getenv(PathEnv); p != "" {
		return p
	}
	if p := DefaultPath(); p != "" {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

// DefaultPath is where a user's configuration lives without --config or
// PITH_CONFIG: $XDG_CONFIG_HOME/pith/config.yaml, or
// ~/.config/pith/config.yaml when XDG_CONFIG_HOME is unset or not absolute
// (the XDG base directory rule), on every system alike. "" without a home
// directory.
func DefaultPath() string {
	dir := os.Getenv("XDG_CONFIG_HOME")
	if !filepath.IsAbs(dir) {
		home, err := os.UserHomeDir()
		if err != nil || home == "" {
			return ""
		}
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "pith", "config.yaml")
}
