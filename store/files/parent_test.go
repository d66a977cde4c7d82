package files_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/store/files"
)

// TestAppendRefusesMissingParent: an append below an explicit parent is
// checked against the file under the lock. A navigation whose target
// vanished while its branch summary was made — the session was replaced
// by another (mv) — hung the summary from an id the file does not have,
// a dangling entry that pi's context then starts from.
func TestAppendRefusesMissingParent(t *testing.T) {
	path := newSession(t, t.TempDir(), 3)
	s, err := files.Open(path, files.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	target := s.Tree().Entries[1].ID
	other := newSession(t, t.TempDir(), 3) // other ids
	if err := os.Rename(other, path); err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(filepath.Dir(other))
	before := mustRead(t, path)
	_, err = s.Append(session.Draft{Type: session.TypeBranchSummary, Parent: &target, Fields: map[string]any{"fromId": target, "summary": "S"}})
	if !errors.Is(err, session.ErrUnchanged) {
		t.Fatalf("append below a vanished entry: %v", err)
	}
	if got := mustRead(t, path); !bytes.Equal(got, before) {
		t.Fatal("the session changed")
	}
	root := ""
	if _, err := s.Append(session.Draft{Type: session.TypeCustom, Parent: &root, Fields: map[string]any{"customType": "root"}}); err != nil {
		t.Fatalf("an explicit root: %v", err)
	}
}
