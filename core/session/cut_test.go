//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package session_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/internal/mapfile"
)

// TestParseCutUnderIt: a mapped session file truncated in place before
// its parse has read it (a tool rewriting it without a rename) is
// mapfile.ErrCut from ParseWith — whether the fault is met by the
// goroutine that splits the file or by a worker parsing a piece — and
// not SIGBUS killing the process.
func TestParseCutUnderIt(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4)) // four pieces, each its own goroutine
	var b bytes.Buffer
	b.WriteString(`{"type":"session","version":3,"id":"cut","timestamp":"2026-12-02T00:00:00Z","cwd":"/w"}` + "\n")
	parent := "null"
	for i := 0; b.Len() < 12<<20; i++ {
		id := fmt.Sprintf("%08x", i+1)
		fmt.Fprintf(&b, `{"type":"message","id":"%s","parentId":%s,"timestamp":"2026-12-02T00:00:00Z","message":{"role":"user","content":"message %d, long enough to fill the file quickly with text of some size"}}`+"\n", id, parent, i)
		parent = `"` + id + `"`
	}
	for _, keep := range []int{100, b.Len() / 2, b.Len() * 9 / 10} {
		t.Run(fmt.Sprint(keep), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "s.jsonl")
			if err := os.WriteFile(path, b.Bytes(), 0o600); err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			data, err := mapfile.Bytes(f, int64(b.Len()))
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(path, int64(keep)); err != nil {
				t.Fatal(err)
			}
			_, err = session.ParseWith(data, session.ParseOptions{})
			if !errors.Is(err, mapfile.ErrCut) {
				t.Fatalf("ParseWith on a file cut to %d bytes: %v, want ErrCut", keep, err)
			}
		})
	}
}
