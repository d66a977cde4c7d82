package workspace

import (
	"strings"
	"testing"
)

// BenchmarkRead reads a 200 KiB source file whole, with the built-in deny
// list (the name and real-path checks, and every line scanned for a
// private key's header) and with an empty one, which only skips those
// checks: the difference is what the deny list costs a read.
func BenchmarkRead(b *testing.B) {
	line := "\tif err := w.deny.Denies(filepath.Join(dir, rel)); err != nil { return nil, err } // an ordinary line\n"
	content := strings.Repeat(line, 200<<10/len(line))
	for _, tc := range []struct {
		name string
		deny *DenyList
	}{{"default", nil}, {"empty", &DenyList{}}} {
		b.Run(tc.name, func(b *testing.B) {
			_, dir := newWorkspace(b, map[string]string{"src/pkg/file.go": content})
			w, err := Open(dir, Options{Deny: tc.deny})
			if err != nil {
				b.Fatal(err)
			}
			defer w.Close()
			b.SetBytes(int64(len(content)))
			b.ReportAllocs()
			for b.Loop() {
				f, err := w.Read("src/pkg/file.go", ReadOptions{})
				if err != nil || !f.EOF {
					b.Fatal(f, err)
				}
			}
		})
	}
}
