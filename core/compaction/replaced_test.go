package compaction

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/store/files"
)

// TestCompactionDiscardedWhenSessionReplaced: while the summary is made,
// another session is moved over the file (mv, a restore from a backup:
// other ids, here as many entries). The compaction describes a history
// the file no longer has: it must be discarded. It was appended with
// the old leaf as parent and the old first kept entry — ids the file
// does not have — so pi's context became the summary of another session.
func TestCompactionDiscardedWhenSessionReplaced(t *testing.T) {
	for _, how := range []string{"rename", "in place"} {
		path := compactable(t)
		s := openStore(t, path)
		prep, res := prepare(t, s)
		otherPath := filepath.Join(t.TempDir(), "other.jsonl")
		other, err := files.Create(otherPath, "/w", files.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for range len(s.Tree().Entries) {
			if _, err := other.Append(session.Draft{Type: session.TypeMessage, Fields: []byte(`{"message":{"role":"user","content":"another session","timestamp":1}}`)}); err != nil {
				t.Fatal(err)
			}
		}
		other.Close()
		if how == "rename" {
			err = os.Rename(otherPath, path)
		} else {
			var data []byte
			if data, err = os.ReadFile(otherPath); err == nil {
				err = os.WriteFile(path, data, 0o644)
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := Persist(s, prep, res, false, nil); !errors.Is(err, ErrDiscarded) {
			t.Fatalf("%s: Persist = %v, want ErrDiscarded", how, err)
		}
		f, err := session.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range f.Entries {
			if e.Type == session.TypeCompaction {
				t.Fatalf("%s: a compaction of the old session was appended to the new one", how)
			}
		}
	}
}
