//go:build unix

package viewer

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestFIFORefused: a FIFO named as the session is refused at once, not
// opened (which would block until a writer comes).
func TestFIFORefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skip("no FIFO here:", err)
	}
	if h, err := New(Options{Path: path}); err == nil {
		h.Close()
		t.Fatal("a FIFO was shown as a session")
	}
	tail := FileTail(func() (*os.File, error) { return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0) }, nil)
	if _, _, err := tail(0); err == nil {
		t.Fatal("FileTail read a FIFO")
	}
}
