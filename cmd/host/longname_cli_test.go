package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pith-dev/pith/internal/sessiongen"
	"github.com/pith-dev/pith/store"
)

// TestLongNameRewritesCLI: prune, prune --restore and migrate (in place
// and --out) work on sessions whose names leave no room for the side
// files they create beside them — the rewrite's temp file
// (.NAME.tmp-RANDOM), the archive (NAME.pruned.jsonl), the append intent
// sidecar, WriteAtomic's temp file. They failed with "file name too long"
// past ~233 bytes (prune's archive past 242), the file system's limit
// being 255 for a name. A side file of such a name is named by a cut of
// it and a hash; nothing is left behind but the session and its archive.
func TestLongNameRewritesCLI(t *testing.T) {
	for _, n := range []int{250, 255} {
		dir := t.TempDir()
		path := filepath.Join(dir, strings.Repeat("é", (n-len(".jsonl"))/2)+strings.Repeat("x", (n-len(".jsonl"))%2)+".jsonl")
		if len(filepath.Base(path)) != n {
			t.Fatalf("name of %d bytes, want %d", len(filepath.Base(path)), n)
		}
		o := sessiongen.Benchmark(5, 300)
		o.Malformed, o.TornTail, o.Compaction, o.Branch, o.Version = 0, false, 0, 0, 2
		if err := sessiongen.GenerateFile(path, o); err != nil {
			t.Skipf("cannot create a %d-byte name here: %v", n, err)
		}
		outDir := t.TempDir()
		out := filepath.Join(outDir, filepath.Base(path))
		for _, args := range [][]string{
			{"migrate", path, "--out", out},
			{"migrate", path, "--in-place"},
			{"label", path, firstID(t, path), "long"},
		} {
			if _, stderr, code := runCLI(t, args...); code != 0 {
				t.Fatalf("%d bytes: %v: %s", n, args[:2], stderr)
			}
		}
		migrated, _ := os.ReadFile(out)
		if !bytes.Contains(migrated[:bytes.IndexByte(migrated, '\n')], []byte(`"version":3`)) {
			t.Fatalf("%d bytes: migrate --out wrote no version 3 file", n)
		}
		before, _ := os.ReadFile(path)
		if !bytes.Contains(before[:bytes.IndexByte(before, '\n')], []byte(`"version":3`)) {
			t.Fatalf("%d bytes: migrate --in-place left the session as it was", n)
		}
		if _, stderr, code := runCLI(t, "prune", path, "--protect", "100", "--minimum", "1"); code != 0 {
			t.Fatalf("%d bytes: prune: %s", n, stderr)
		}
		pruned, _ := os.ReadFile(path)
		if len(pruned) >= len(before) {
			t.Fatalf("%d bytes: prune pruned nothing", n)
		}
		if _, stderr, code := runCLI(t, "prune", path, "--restore"); code != 0 {
			t.Fatalf("%d bytes: prune --restore: %s", n, stderr)
		}
		if after, _ := os.ReadFile(path); !bytes.Equal(after, before) {
			t.Fatalf("%d bytes: the restored session differs from the one pruned", n)
		}
		var visible []string
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if !strings.HasPrefix(e.Name(), ".") {
				visible = append(visible, e.Name())
			}
		}
		if len(visible) != 2 || !strings.HasSuffix(visible[0], ".pruned.jsonl") && !strings.HasSuffix(visible[1], ".pruned.jsonl") {
			t.Fatalf("%d bytes: want the session and its archive, found %q", n, visible)
		}
		if got := store.SkipArchives(visible); len(got) != 1 || got[0] != filepath.Base(path) {
			t.Fatalf("%d bytes: a listing shows %q, want the session only", n, got)
		}
		for _, d := range []string{dir, outDir} {
			ents, _ := os.ReadDir(d)
			for _, e := range ents {
				if strings.Contains(e.Name(), ".tmp-") {
					t.Fatalf("%d bytes: a temp file was left: %s", n, e.Name())
				}
				if len(e.Name()) > 255 {
					t.Fatalf("%d bytes: a name of %d bytes", n, len(e.Name()))
				}
			}
		}
	}
}
