package served

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/go-hclog"
)

// TestCreateDirSwappedForLink: with tenants, the directories a create
// makes are made through real directories only. team-a/x, missing when
// checked, became a link to ../team-b before the directories were made:
// os.Root's MkdirAll followed it (it stays inside sessions.root) and made
// team-b/y, an empty directory in another tenant's tree, before the open
// that came after refused the name.
func TestCreateDirSwappedForLink(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"team-a", "team-b"} {
		if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	f := NewFiles(func() string { return root }, func() bool { return true }, nil, hclog.NewNullLogger())
	defer f.Close()
	f.beforeMkdir = func() {
		if err := os.Symlink("../team-b", filepath.Join(root, "team-a/x")); err != nil {
			t.Fatal(err)
		}
	}
	none := func(any, int64) (bool, error) { return false, nil }
	b, _, err := f.Open(context.Background(), "team-a/x/y/s.jsonl", true, "/w", none)
	if err == nil {
		b.(*fileBacking).st.Load().Close()
		t.Fatal("the session was created through the link")
	}
	if !errors.Is(err, ErrOutsideRoot) {
		t.Errorf("err = %v, want ErrOutsideRoot", err)
	}
	if _, err := os.Lstat(filepath.Join(root, "team-b/y")); err == nil {
		t.Fatal("a directory was made in team-b through the swapped-in link")
	}
}

// TestOpenDirMissingThenLinked: with tenants, a session's directory that
// is missing when checked and a link to another tenant's directory by the
// open is not followed. The check passed a missing directory with nothing
// to compare, and os.Root followed the link made after it (it stays inside
// sessions.root): team-a's name opened team-b's session.
func TestOpenDirMissingThenLinked(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"team-a", "team-b"} {
		if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "team-b/s.jsonl"), []byte(`{"type":"session","version":3,"id":"b","timestamp":"2026-01-01T00:00:00Z","cwd":"/b"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f := NewFiles(func() string { return root }, func() bool { return true }, nil, hclog.NewNullLogger())
	defer f.Close()
	f.afterCheck = func() {
		if err := os.Symlink("../team-b", filepath.Join(root, "team-a/x")); err != nil {
			t.Fatal(err)
		}
	}
	none := func(any, int64) (bool, error) { return false, nil }
	b, _, err := f.Open(context.Background(), "team-a/x/s.jsonl", false, "", none)
	if err == nil {
		b.(*fileBacking).st.Load().Close()
		t.Fatal("team-b's session was opened under team-a's name through a link made after the check")
	}
	if !errors.Is(err, os.ErrNotExist) && !errors.Is(err, ErrOutsideRoot) {
		t.Errorf("err = %v, want not found or ErrOutsideRoot", err)
	}
}
