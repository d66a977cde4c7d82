package files_test

import (
	"path/filepath"
	"testing"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/store/files"
)

// TestDraftOfPrevious: a draft's fields made from the id of the draft
// before it in the same append (a label on the summary appended with it);
// on the first draft it is an error and nothing is written.
func TestDraftOfPrevious(t *testing.T) {
	s, err := files.Create(filepath.Join(t.TempDir(), "s.jsonl"), "/w", files.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	label := func(id string) any { return map[string]any{"targetId": id, "label": "x"} }
	es, err := s.Append(
		session.Draft{Type: session.TypeCustom, Fields: map[string]any{"customType": "t"}},
		session.Draft{Type: session.TypeLabel, OfPrevious: label},
	)
	if err != nil {
		t.Fatal(err)
	}
	if got := es[1].Get("targetId").String(); got != es[0].ID || es[1].ParentID != es[0].ID {
		t.Errorf("label %s, want target and parent %s", es[1].Raw, es[0].ID)
	}
	n := len(s.Tree().Entries)
	if _, err := s.Append(session.Draft{Type: session.TypeLabel, OfPrevious: label}); err == nil {
		t.Error("OfPrevious on the first draft was accepted")
	}
	if len(s.Tree().Entries) != n {
		t.Error("the refused append wrote entries")
	}
}
