package server

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
	f := newFilesSource(func() string { return root }, func() bool { return true }, hclog.NewNullLogger())
	defer f.close()
	f.beforeMkdir = func() {
		if err := os.Symlink("../team-b", filepath.Join(root, "team-a/x")); err != nil {
			t.Fatal(err)
		}
	}
	none := func(any, int64) (*openSession, error) { return nil, nil }
	b, _, _, err := f.open(context.Background(), "team-a/x/y/s.jsonl", true, "/w", none)
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
