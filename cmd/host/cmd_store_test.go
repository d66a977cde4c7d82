package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/pith-dev/pith/internal/pgtest"
)

// TestExportImportRoundTrip moves the pi fixtures and the demo session
// into each store and out again: the bytes must not change, and the
// exported file gives the same `pith context` as the original.
func TestExportImportRoundTrip(t *testing.T) {
	files := []string{"../../examples/demo-session.jsonl"}
	if m, _ := filepath.Glob(filepath.Join(fixtureDir, "*.jsonl")); len(m) > 0 {
		files = append(files, m...)
	} else {
		t.Logf("no pi fixtures at %s: round-tripping the demo session only", fixtureDir)
	}
	stores := map[string]string{"files": t.TempDir()}
	if m := pgtest.Missing(); m == "" {
		stores["postgres"] = pgtest.NewDatabase(t)
	} else {
		t.Logf("files store only, no PostgreSQL: %s", m)
	}
	for kind, url := range stores {
		for _, file := range files {
			name := "team/" + filepath.Base(file)
			if out, errs, code := runCLI(t, "import", "--store", url, file, name); code != 0 {
				t.Fatalf("%s: import %s: %s%s", kind, file, out, errs)
			}
			if _, errs, code := runCLI(t, "import", "--store", url, file, name); code == 0 {
				t.Fatalf("%s: a second import over %s succeeded", kind, name)
			} else if !bytes.Contains([]byte(errs), []byte("already exists")) {
				t.Fatalf("%s: second import: %s", kind, errs)
			}
			out := filepath.Join(t.TempDir(), "out.jsonl")
			if _, errs, code := runCLI(t, "export", "--store", url, "--out", out, name); code != 0 {
				t.Fatalf("%s: export %s: %s", kind, name, errs)
			}
			want, _ := os.ReadFile(file)
			got, _ := os.ReadFile(out)
			if !bytes.Equal(got, want) {
				t.Fatalf("%s: %s did not round-trip byte for byte (%d bytes, want %d)", kind, file, len(got), len(want))
			}
			stdout, _, code := runCLI(t, "export", "--store", url, name)
			if code != 0 || stdout != string(want) {
				t.Fatalf("%s: export to stdout differs", kind)
			}
			c1, _, _ := runCLI(t, "context", "--json", file)
			c2, _, _ := runCLI(t, "context", "--json", out)
			if c1 != c2 {
				t.Fatalf("%s: pith context of the exported %s differs", kind, file)
			}
			// The inspecting commands read the stored session directly.
			c3, errs, code := runCLI(t, "context", "--json", "--store", url, name)
			if code != 0 || c3 != c1 {
				t.Fatalf("%s: pith context --store %s differs from the file's (%s)", kind, name, errs)
			}
			t1, _, _ := runCLI(t, "tree", "--json", file)
			t2, errs, code := runCLI(t, "tree", "--json", "--store", url, name)
			if code != 0 || t1 != t2 {
				t.Fatalf("%s: pith tree --store %s differs from the file's (%s)", kind, name, errs)
			}
		}
	}
	if _, errs, code := runCLI(t, "export", "--store", t.TempDir(), "../etc/passwd.jsonl"); code == 0 || !bytes.Contains([]byte(errs), []byte("invalid session path")) {
		t.Fatalf("export of an unsafe name: code %d, %s", code, errs)
	}
}
