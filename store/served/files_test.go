package served

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/hashicorp/go-hclog"
)

const header = `{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00Z","cwd":"/w"}` + "\n"

// TestOpenKnownByAnotherName: without tenants a symlinked directory is
// an alias, so its name reaches the session under the same key, and a
// caller that has the key open gets no second handle (nothing parsed).
func TestOpenKnownByAnotherName(t *testing.T) {
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, "team"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "team/s.jsonl"), []byte(header), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("team", filepath.Join(root, "alias")); err != nil {
		t.Fatal(err)
	}
	f := NewFiles(func() string { return root }, func() bool { return false }, nil, hclog.NewNullLogger())
	defer f.Close()
	ctx := context.Background()
	var first any
	b, _, err := f.Open(ctx, "team/s.jsonl", false, "", func(key any, size int64) (bool, error) {
		first = key
		if size != int64(len(header)) {
			t.Errorf("size = %d, want %d", size, len(header))
		}
		return false, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.Key() != first {
		t.Fatalf("the backing's key %v is not the one seen %v", b.Key(), first)
	}
	b2, _, err := f.Open(ctx, "alias/s.jsonl", false, "", func(key any, _ int64) (bool, error) {
		if key != first {
			t.Errorf("the alias has key %v, want %v", key, first)
		}
		return true, nil
	})
	if err != nil || b2 != nil {
		t.Fatalf("a known session was opened again: %v, %v", b2, err)
	}
	if !b.Reaches("alias/s.jsonl") || b.Reaches("team/other.jsonl") {
		t.Fatal("Reaches does not follow the names that lead to the session")
	}
}

// TestFilesList: the sessions listed are the regular files in the
// grammar, neither in hidden directories nor prune archives, that the
// caller may see.
func TestFilesList(t *testing.T) {
	root := t.TempDir()
	for _, name := range []string{"a/s.jsonl", "a/s.jsonl.pruned.jsonl", "b/t.jsonl", ".hidden/u.jsonl", "a/notes.txt"} {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(header), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f := NewFiles(func() string { return root }, func() bool { return false }, nil, hclog.NewNullLogger())
	defer f.Close()
	names, err := f.List(context.Background(), func(n string) bool { return n != "b/t.jsonl" }, 100)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a/s.jsonl"}; !slices.Equal(names, want) {
		t.Fatalf("listed %q, want %q", names, want)
	}
	missing := NewFiles(func() string { return filepath.Join(root, "none") }, func() bool { return false }, nil, hclog.NewNullLogger())
	defer missing.Close()
	if names, err := missing.List(context.Background(), func(string) bool { return true }, 100); err != nil || names != nil {
		t.Fatalf("no root: %q, %v", names, err)
	}
}
