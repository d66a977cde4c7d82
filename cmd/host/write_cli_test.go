package main

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/pith-dev/pith/internal/sessiongen"
)

func smallSession(t *testing.T, dir string, version int) string {
	t.Helper()
	path := filepath.Join(dir, "s.jsonl")
	o := sessiongen.Benchmark(5, 300)
	o.Malformed, o.TornTail, o.Compaction, o.Branch, o.Version = 0, false, 0, 0, version
	if err := sessiongen.GenerateFile(path, o); err != nil {
		t.Fatal(err)
	}
	return path
}

func wantOneLine(t *testing.T, what, stderr string, code int, want string) {
	t.Helper()
	if code != 1 || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.Contains(stderr, want) {
		t.Fatalf("%s: exit %d, %q; want one line with %q", what, code, stderr, want)
	}
}

// TestReadOnlySessionCLI: every writing command refuses a 0444 session in
// one line, exit 1, and changes nothing (root could write it).
func TestReadOnlySessionCLI(t *testing.T) {
	dir := t.TempDir()
	path := smallSession(t, dir, 3)
	v2 := smallSession(t, t.TempDir(), 2)
	for _, p := range []string{path, v2} {
		os.Chmod(p, 0o444)
	}
	before, _ := os.ReadFile(path)
	beforeV2, _ := os.ReadFile(v2)
	id := firstID(t, path)
	for _, args := range [][]string{
		{"prune", path, "--protect", "100", "--minimum", "1"},
		{"prune", path, "--restore"},
		{"label", path, id, "x"},
		{"compact", path, "--keep-recent-tokens", "1000"},
		{"migrate", v2, "--in-place"},
	} {
		_, stderr, code := runCLI(t, args...)
		wantOneLine(t, strings.Join(args[:1], " "), stderr, code, "read-only")
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, before) {
		t.Fatal("a read-only session changed")
	}
	if got, _ := os.ReadFile(v2); !bytes.Equal(got, beforeV2) {
		t.Fatal("a read-only v2 session changed")
	}
	if _, err := os.Stat(path + ".pruned.jsonl"); err == nil {
		t.Fatal("an archive was written for a read-only session")
	}
}

func firstID(t *testing.T, path string) string {
	out, stderr, code := runCLI(t, "tree", path)
	if code != 0 {
		t.Fatal(stderr)
	}
	for _, f := range strings.Fields(out) {
		if len(f) == 8 && strings.Trim(f, "0123456789abcdef") == "" {
			return f
		}
	}
	t.Fatalf("no id in %s", out)
	return ""
}

// TestSymlinkedSessionCLI: prune, restore and migrate through a link
// rewrite the target and keep the link; the archive is the target's.
func TestSymlinkedSessionCLI(t *testing.T) {
	target := smallSession(t, t.TempDir(), 2)
	link := filepath.Join(t.TempDir(), "link.jsonl")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"migrate", link, "--in-place"},
		{"prune", link, "--protect", "100", "--minimum", "1"},
		{"prune", link, "--restore"},
	} {
		if _, stderr, code := runCLI(t, args...); code != 0 {
			t.Fatalf("%v: %s", args, stderr)
		}
		if fi, err := os.Lstat(link); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			t.Fatalf("%v replaced the link", args)
		}
	}
	data, _ := os.ReadFile(target)
	if !bytes.Contains(data[:bytes.IndexByte(data, '\n')], []byte(`"version":3`)) {
		t.Fatal("the target was not migrated")
	}
	if _, err := os.Stat(target + ".pruned.jsonl"); err != nil {
		t.Fatalf("no archive next to the target: %v", err)
	}
}

// TestNonRegularFilesCLI: a FIFO or a device is refused at once, in one
// line, by reading and writing commands alike.
func TestNonRegularFilesCLI(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo.jsonl")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("no FIFO: %v", err)
	}
	for _, p := range []string{fifo, "/dev/zero"} {
		for _, args := range [][]string{{"context", p}, {"tree", p}, {"prune", p}, {"label", p, "x", "y"}, {"migrate", p, "--in-place"}} {
			_, stderr, code := runCLI(t, args...)
			wantOneLine(t, strings.Join(args, " "), stderr, code, "not a regular file")
		}
	}
}

// TestMigrateOutOverItself: `migrate FILE --out FILE` (or --out naming
// FILE through a link) changes the session itself, so it goes through the
// session's write protocol like --in-place: a link stays a link and its
// target is migrated, a file with a second hard link is refused and left
// as it was. It used to be written as any --out file — a temp file
// renamed over the name, without the session's lock — which replaced the
// link with a copy (the session stayed version 2), split hard links, and
// lost what pi appended between the read and the rename.
func TestMigrateOutOverItself(t *testing.T) {
	target := smallSession(t, t.TempDir(), 2)
	link := filepath.Join(t.TempDir(), "link.jsonl")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runCLI(t, "migrate", link, "--out", link); code != 0 {
		t.Fatalf("migrate through the link: %s", stderr)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Fatal("migrate --out over the session replaced the link")
	}
	data, _ := os.ReadFile(target)
	if !bytes.Contains(data[:bytes.IndexByte(data, '\n')], []byte(`"version":3`)) {
		t.Fatal("the link's target was not migrated")
	}

	linked := smallSession(t, t.TempDir(), 2)
	if err := os.Link(linked, linked+".second"); err != nil {
		t.Skipf("no hard links: %v", err)
	}
	before, _ := os.ReadFile(linked)
	_, stderr, code := runCLI(t, "migrate", linked, "--out", linked)
	wantOneLine(t, "migrate --out over a hard-linked session", stderr, code, "hard link")
	if got, _ := os.ReadFile(linked); !bytes.Equal(got, before) {
		t.Fatal("the hard-linked session changed")
	}
}
