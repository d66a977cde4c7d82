package session_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/pith-dev/pith/core/session"
)

// TestAppendWithLongName: a session whose name leaves no room for the
// hidden intent sidecar's (".NAME.append" is 8 bytes longer, past the
// file system's 255) is appended to like one in a read-only directory,
// without the sidecar. Every append used to fail with "file name too
// long" — a session pi writes to without trouble that Pith could not
// label, compact or navigate.
func TestAppendWithLongName(t *testing.T) {
	path := filepath.Join(t.TempDir(), strings.Repeat("x", 249-len(".jsonl"))+".jsonl")
	s, err := session.Create(path, "/w", session.Options{})
	if err != nil {
		t.Skipf("cannot create a 249-byte name here: %v", err)
	}
	defer s.Close()
	if _, err := s.Append(session.Draft{Type: session.TypeCustom, Fields: map[string]any{"customType": "t"}}); err != nil {
		t.Fatal(err)
	}
	f, err := session.Load(path)
	if err != nil || len(f.Entries) != 1 {
		t.Fatalf("%v %v", f, err)
	}
}
