package wiring

import (
	"os"
	"path/filepath"
	"testing"
)

// The ready file goes through files.WriteAtomic: a poller sees the old
// address or the new one, never half, and no temp file is left behind.
func TestWriteReadyFileReplacesAtomically(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ready")
	for _, addr := range []string{"127.0.0.1:1234", "unix:/tmp/pith.sock"} {
		if err := writeReadyFile(path, addr); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != addr+"\n" {
			t.Fatalf("ready file = %q, want %q", got, addr+"\n")
		}
	}
	names, _ := os.ReadDir(dir)
	if len(names) != 1 {
		t.Fatalf("directory holds %d files, want only the ready file", len(names))
	}
	if err := writeReadyFile(filepath.Join(dir, "missing", "ready"), "x"); err == nil {
		t.Fatal("writing into a missing directory succeeded")
	}
}
