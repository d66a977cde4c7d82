package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/pith-dev/pith/internal/sessiongen"
)

// mountTmpfs mounts a small tmpfs for a real disk-full test, or skips
// with the reason (CI runs as root and can; most desktops cannot).
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		t.Skipf("SKIP: cannot mount a %s tmpfs for the disk-full test (%v); run as root to include it", size, err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, 0) })
	return dir
}

// fillDisk writes a filler file until the file system is full.
func fillDisk(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 4096)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	// Small writes too, so not even a short line fits.
	for {
		if _, err := f.Write(chunk[:1]); err != nil {
			break
		}
	}
	return path
}

// TestDiskFull on a real 2 MB tmpfs: prune and compact on a full disk fail
// with one line, leave the session and its archive whole (no torn line, no
// torn record), and succeed once space is freed; restore then gives back
// every output byte for byte.
func TestDiskFull(t *testing.T) {
	dir := mountTmpfs(t, "2m")
	path := filepath.Join(dir, "s.jsonl")
	o := sessiongen.Benchmark(3, 250)
	o.Malformed, o.TornTail, o.Compaction, o.Branch = 0, false, 0, 0
	if err := sessiongen.GenerateFile(path, o); err != nil {
		t.Fatal(err)
	}
	original, _ := os.ReadFile(path)
	archive := path + ".pruned.jsonl"

	if out, stderr, code := runCLI(t, "prune", path, "--protect", "3000", "--minimum", "1"); code != 0 || !strings.HasPrefix(out, "pruned") {
		t.Fatalf("first prune: %s%s", out, stderr)
	}
	filler := fillDisk(t, dir)
	before, _ := os.ReadFile(path)
	archBefore, _ := os.ReadFile(archive)

	// Case 2: prune on a full disk.
	out, stderr, code := runCLI(t, "prune", path, "--protect", "500", "--minimum", "1")
	if code == 0 || strings.Count(strings.TrimSpace(stderr), "\n") > 0 || !strings.Contains(stderr, "no space left") || !strings.Contains(stderr, "unchanged") {
		t.Fatalf("prune on a full disk: exit %d, %q %q", code, out, stderr)
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, before) {
		t.Fatal("the session changed")
	}
	if got, _ := os.ReadFile(archive); !bytes.Equal(got, archBefore) {
		t.Fatalf("the archive changed: %d → %d bytes", len(archBefore), len(got))
	}

	// Case 4: compact on a full disk.
	_, stderr, code = runCLI(t, "compact", path, "--keep-recent-tokens", "2000")
	if code == 0 || !strings.Contains(stderr, "unchanged") {
		t.Fatalf("compact on a full disk: exit %d, %q", code, stderr)
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, before) {
		t.Fatal("compact on a full disk changed the session (a torn line?)")
	}
	if names, _ := filepath.Glob(filepath.Join(dir, ".s.jsonl.tmp-*")); len(names) > 0 {
		t.Fatalf("left on the full disk: %v", names)
	}

	os.Remove(filler)
	if _, stderr, code := runCLI(t, "prune", path, "--protect", "500", "--minimum", "1"); code != 0 {
		t.Fatalf("prune after freeing space: %s", stderr)
	}
	if _, stderr, code := runCLI(t, "prune", path, "--restore"); code != 0 {
		t.Fatalf("restore: %s", stderr)
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, original) {
		t.Fatal("restore did not give back the original session")
	}
	if _, stderr, code := runCLI(t, "compact", path, "--keep-recent-tokens", "2000"); code != 0 {
		t.Fatalf("compact after freeing space: %s", stderr)
	}
}
