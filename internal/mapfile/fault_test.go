//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package mapfile

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// mapThenCut maps a file of size bytes and then truncates it in place to
// keep bytes, as a tool that rewrites a file without a rename would.
func mapThenCut(t *testing.T, size, keep int) (string, []byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "session.jsonl")
	if err := os.WriteFile(path, bytes.Repeat([]byte("x"), size), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	data, err := Bytes(f, int64(size))
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, int64(keep)); err != nil {
		t.Fatal(err)
	}
	return path, data
}

// TestGuardCutFile: reading a mapping past the end of a file cut under it
// is ErrCut naming the file, on the goroutine that read it, where it
// would otherwise be SIGBUS.
func TestGuardCutFile(t *testing.T) {
	path, data := mapThenCut(t, 4*MinSize, 4096)
	var sum int
	err := Guard(func() error {
		for i := 0; i < len(data); i += 4096 {
			sum += int(data[i])
		}
		return nil
	})
	if !errors.Is(err, ErrCut) || !strings.Contains(err.Error(), path) {
		t.Fatalf("reading past the cut: %v (sum %d), want ErrCut naming %s", err, sum, path)
	}
	// The bytes before the cut stay readable.
	if err := Guard(func() error { sum += int(data[0]); return nil }); err != nil {
		t.Fatalf("reading before the cut: %v", err)
	}
}

// TestGuardOtherPanics: a panic that is not a fault on a mapping goes on,
// a fault elsewhere included; an error of f comes back as is.
func TestGuardOtherPanics(t *testing.T) {
	mustPanic := func(name string, f func() error) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Errorf("%s: Guard swallowed the panic", name)
			}
		}()
		_ = Guard(f)
	}
	mustPanic("a panic of f", func() error { panic("boom") })
	mustPanic("a nil pointer", func() error {
		var p *int
		return errors.New(string(rune(*p)))
	})
	// A page no read may touch, mapped by someone else than Bytes.
	guard, err := syscall.Mmap(-1, 0, os.Getpagesize(), syscall.PROT_NONE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(guard)
	mustPanic("a fault outside this package's mappings", func() error {
		sink += guard[0]
		return nil
	})
	want := errors.New("f's own")
	if err := Guard(func() error { return want }); err != want {
		t.Errorf("Guard returned %v, want f's error", err)
	}
}

// sink keeps the compiler from dropping a read whose value is unused.
var sink byte
