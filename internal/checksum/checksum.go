// Package checksum is Pith's one check of bytes against an expected SHA-256
// written as hex: a plugin binary against its configured sha256 (before the
// host starts it and when `pith plugins check` reports on it), a prune
// archive record against the sum it carries, a configuration value that
// must be a SHA-256 at all. One place decides what a well-formed sum is
// (64 hex digits, either case) and compares sums in constant time, so the
// entry points cannot drift apart.
package checksum

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
)

// ErrMalformed is an expected sum that is not 64 hex digits.
var ErrMalformed = errors.New("a SHA-256 must be 64 hex digits")

// ErrMismatch is data whose SHA-256 is not the expected one; the error
// wrapping it is a *MismatchError with both sums.
var ErrMismatch = errors.New("SHA-256 mismatch")

// MismatchError says what the sum was and what it should have been.
type MismatchError struct {
	Got, Want []byte
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("SHA-256 is %x, expected %x", e.Got, e.Want)
}

// Is makes a MismatchError match ErrMismatch.
func (e *MismatchError) Is(target error) bool { return target == ErrMismatch }

// Parse decodes an expected sum written as 64 hex digits, either case.
func Parse(want string) ([]byte, error) {
	b, err := hex.DecodeString(want)
	if err != nil || len(b) != sha256.Size {
		return nil, fmt.Errorf("%w, got %q", ErrMalformed, want)
	}
	return b, nil
}

// Sum is the SHA-256 of data as lowercase hex, the form Pith writes.
func Sum(data []byte) string {
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

// Equal compares two sums in constant time, so timing tells nothing about
// how close a guess came.
func Equal(got, want []byte) bool { return subtle.ConstantTimeCompare(got, want) == 1 }

// Verify checks data against want (hex). The error wraps ErrMalformed or
// ErrMismatch.
func Verify(data []byte, want string) error {
	w, err := Parse(want)
	if err != nil {
		return err
	}
	got := sha256.Sum256(data)
	if !Equal(got[:], w) {
		return &MismatchError{Got: got[:], Want: w}
	}
	return nil
}

// VerifyReader checks what r yields against want (hex), reading it as a
// stream. The error wraps ErrMalformed, ErrMismatch or the read error.
func VerifyReader(r io.Reader, want string) error {
	w, err := Parse(want)
	if err != nil {
		return err
	}
	h := sha256.New()
	if _, err := io.Copy(h, r); err != nil {
		return err
	}
	if got := h.Sum(nil); !Equal(got, w) {
		return &MismatchError{Got: got, Want: w}
	}
	return nil
}

// VerifyFile is VerifyReader on the file at path.
func VerifyFile(path, want string) error {
	if _, err := Parse(want); err != nil {
		return err
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return VerifyReader(f, want)
}
