package wiregen

import "testing"

// The naming conventions options.proto documents.
func TestNames(t *testing.T) {
	for snakeName, want := range map[string]string{
		"session_id":          "SessionID",
		"first_kept_entry_id": "FirstKeptEntryID",
		"identity":            "Identity",
		"path_since_idle":     "PathSinceIdle",
		"workspace":           "Workspace",
	} {
		if got := goFieldName(snakeName); got != want {
			t.Errorf("goFieldName(%q) = %q, want %q", snakeName, got, want)
		}
	}
	if got := snake("LogLevel"); got != "log_level" {
		t.Errorf("snake(LogLevel) = %q", got)
	}
}

func TestDocReadsInGoTerms(t *testing.T) {
	c := &contract{goNames: map[string]string{"BeforeTreeRequest": "BeforeTreeEvent", "old_leaf_id": "OldLeafID"}}
	got := c.doc(" BeforeTreeRequest reads the path from old_leaf_id,\n\n not old_leaf_ids or session_before_tree.\n")
	want := []string{"BeforeTreeEvent reads the path from OldLeafID,", "", "not old_leaf_ids or session_before_tree."}
	if len(got) != len(want) {
		t.Fatalf("doc = %q", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d = %q, want %q", i, got[i], want[i])
		}
	}
	if s := sentence([]string{"The first.", "Not this. Nor this."}); s != "The first." {
		t.Errorf("sentence = %q", s)
	}
}
