package files_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/store/files"
)

// TestAppendWithLongName: a session whose name leaves no room for the
// hidden intent sidecar's (".NAME.append" is 8 bytes longer, past the
// file system's 255) is appended to like one in a read-only directory,
// without the sidecar. Every append used to fail with "file name too
// long" — a session pi writes to without trouble that Pith could not
// label, compact or navigate.
func TestAppendWithLongName(t *testing.T) {
	path := filepath.Join(t.TempDir(), strings.Repeat("x", 249-len(".jsonl"))+".jsonl")
	s, err := files.Create(path, "/w", files.Options{})
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

// TestLongNameSideFiles: the side files of a session whose name leaves no
// room for them are named by session.SideName, a cut of the name and a
// hash. A rewrite of another session in the directory keeps a long
// session's intent sidecar (its cut name is no session's, so it looked
// like the sidecar of a session that is gone), and a rewrite of the long
// session removes the temp file a killed rewrite of it left.
func TestLongNameSideFiles(t *testing.T) {
	dir := t.TempDir()
	longName := strings.Repeat("y", 250-len(".jsonl")) + ".jsonl"
	long, err := files.Create(filepath.Join(dir, longName), "/w", files.Options{})
	if err != nil {
		t.Skipf("cannot create a 250-byte name here: %v", err)
	}
	defer long.Close()
	if _, err := long.Append(session.Draft{Type: session.TypeCustom, Fields: map[string]any{"customType": "t"}}); err != nil {
		t.Fatal(err)
	}
	intent := filepath.Join(dir, session.SideName(".", longName, ".append"))
	if _, err := os.Stat(intent); err != nil {
		t.Fatalf("no intent sidecar for the long name: %v", err)
	}
	short, err := files.Create(filepath.Join(dir, "s.jsonl"), "/w", files.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer short.Close()
	rewrite := func(s *files.Session) {
		t.Helper()
		if err := s.Update(func(tx *session.Tx) (*session.File, error) { return tx.File(), nil }); err != nil {
			t.Fatal(err)
		}
	}
	rewrite(short)
	if _, err := os.Stat(intent); err != nil {
		t.Fatalf("a rewrite of another session removed the long session's intent sidecar: %v", err)
	}
	left := filepath.Join(dir, session.SideStem(".", longName, len(".tmp-")+16)+".tmp-0123456789abcdef")
	if err := os.WriteFile(left, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	rewrite(long)
	if _, err := os.Stat(left); err == nil {
		t.Fatal("the temp file a killed rewrite of the long session left is still there")
	}
}

func TestSideName(t *testing.T) {
	for _, tc := range []struct{ prefix, name, suffix string }{
		{".", "s.jsonl", ".append"},
		{"", strings.Repeat("a", 242) + ".jsonl", ".pruned.jsonl"},
		{".", strings.Repeat("é", 124) + ".jsonl", ".tmp-0123456789abcdef"},
		{"", strings.Repeat("€", 85), ".pruned.jsonl"},
	} {
		got := session.SideName(tc.prefix, tc.name, tc.suffix)
		if len(got) > session.NameMax || !utf8.ValidString(got) || !strings.HasPrefix(got, tc.prefix) || !strings.HasSuffix(got, tc.suffix) {
			t.Errorf("SideName(%q, %d bytes, %q) = %q (%d bytes)", tc.prefix, len(tc.name), tc.suffix, got, len(got))
		}
		if fits := len(tc.prefix+tc.name+tc.suffix) <= session.NameMax; fits != (got == tc.prefix+tc.name+tc.suffix) {
			t.Errorf("SideName(%q, %d bytes, %q) = %q", tc.prefix, len(tc.name), tc.suffix, got)
		}
	}
	// Two long names that differ only past the cut get different names.
	a, b := strings.Repeat("a", 250)+"1", strings.Repeat("a", 250)+"2"
	if session.SideName(".", a, ".append") == session.SideName(".", b, ".append") {
		t.Fatal("two long names share a side file")
	}
}
