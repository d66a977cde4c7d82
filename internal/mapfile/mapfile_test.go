package mapfile

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestBytes reads files below and above MinSize (read and mapped) and an
// empty one, and checks the bytes stay valid after the file is closed.
func TestBytes(t *testing.T) {
	for _, size := range []int{0, 10, MinSize - 1, MinSize, MinSize + 12345} {
		want := bytes.Repeat([]byte("0123456789abcdef\n"), size/17+1)[:size]
		path := filepath.Join(t.TempDir(), "f")
		if err := os.WriteFile(path, want, 0o600); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Bytes(f, int64(size))
		f.Close()
		if err != nil {
			t.Fatalf("size %d: %v", size, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("size %d: the bytes differ", size)
		}
	}
}
