package pluginhost

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"

	"github.com/pith-dev/pith/internal/checksum"
)

// binary is the plugin file a start executes.
type binary struct {
	// path is what to execute: the configured path, or on Linux, when a
	// sha256 is configured, the open file that was checked.
	path  string
	close func()
}

// openBinary returns the plugin binary to execute. With a configured
// sha256 the file is opened and checked, and on Linux the process is then
// started from that open file (/proc/self/fd/N): the bytes checked are the
// bytes run, and swapping the file after the check changes nothing. A
// script (#!) is still run by path — its interpreter reopens it by name —
// as everything is elsewhere, right after the check.
func (s Spec) openBinary() (binary, error) {
	if s.SHA256 == "" {
		return binary{path: s.Path, close: func() {}}, nil
	}
	f, err := os.Open(s.Path)
	if err != nil {
		return binary{}, fmt.Errorf("plugin %q: checksum %s: %w", s.Name, s.Path, err)
	}
	if err := s.verify(f); err != nil {
		f.Close()
		return binary{}, err
	}
	if fdPath, ok := execPathOf(f); ok {
		return binary{path: fdPath, close: func() { f.Close() }}, nil
	}
	f.Close()
	return binary{path: s.Path, close: func() {}}, nil
}

// verify hashes the open file against the configured sha256.
func (s Spec) verify(f *os.File) error {
	err := checksum.VerifyReader(f, s.SHA256)
	var mismatch *checksum.MismatchError
	switch {
	case errors.As(err, &mismatch):
		return fmt.Errorf("plugin %q: %w: %s has sha256 %x, the configuration says %x; not started", s.Name, ErrChecksumMismatch, s.Path, mismatch.Got, mismatch.Want)
	case errors.Is(err, checksum.ErrMalformed):
		return fmt.Errorf("plugin %q: %w", s.Name, err)
	case err != nil:
		return fmt.Errorf("plugin %q: checksum %s: %w", s.Name, s.Path, err)
	}
	return nil
}

// execPathOf is the path that executes the open file f itself, when the
// system has one and f is not a script.
func execPathOf(f *os.File) (string, bool) {
	if runtime.GOOS != "linux" {
		return "", false
	}
	head := make([]byte, 2)
	if _, err := f.ReadAt(head, 0); err != nil || bytes.Equal(head, []byte("#!")) {
		return "", false
	}
	p := "/proc/self/fd/" + strconv.Itoa(int(f.Fd()))
	if _, err := os.Stat(p); err != nil {
		return "", false // no /proc
	}
	return p, true
}

// Prepare opens and checks the plugin's binary now (its configured sha256,
// when there is one), so that a mismatch is known before the operation
// needs the plugin; the first start then runs the file checked here. It
// returns the check's error, which wraps ErrChecksumMismatch for a binary
// that does not match. Without a sha256, or for an attached plugin, there
// is nothing to check.
func (s *Supervisor) Prepare() error {
	if s.spec.SHA256 == "" || s.spec.Reattach != "" {
		return nil
	}
	bin, err := s.spec.openBinary()
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.prepared != nil || s.state == StateStopped {
		bin.close()
		return nil
	}
	s.prepared = &bin
	return nil
}

// binary is the prepared binary, once, or the binary opened and checked
// now (a restart checks the file again).
func (s *Supervisor) binary() (binary, error) {
	s.mu.Lock()
	bin := s.prepared
	s.prepared = nil
	s.mu.Unlock()
	if bin != nil {
		return *bin, nil
	}
	return s.spec.openBinary()
}

// Mismatch returns the first error of err (one error, or errors.Join's)
// that wraps ErrChecksumMismatch, or nil: a caller stops on it whatever
// the plugin's failure policy, with its one line naming the plugin, the
// file and both sums.
func Mismatch(err error) error {
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range joined.Unwrap() {
			if m := Mismatch(e); m != nil {
				return m
			}
		}
		return nil
	}
	if errors.Is(err, ErrChecksumMismatch) {
		return err
	}
	return nil
}
