package files_test

import (
	"bytes"
	"os"
	"testing"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/store/files"
)

// TestLastLineWithoutNewline: a session whose last line is a whole entry
// without its newline (an editor that strips it, a copy cut short at the
// very end) is read by pi with that entry as the leaf. The Store must see
// it too: it used to leave the line out as torn, so its first append
// (a compaction, a label) fenced the line off and hung the new entry
// below the entry before it, and the last message fell off the path of
// every reader, pi included.
func TestLastLineWithoutNewline(t *testing.T) {
	for _, op := range []string{"append", "rewrite", "catch-up"} {
		path := newSession(t, t.TempDir(), 3)
		writeRaw(t, path, piLine[:len(piLine)-1])
		s, err := files.Open(path, files.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if l := s.Leaf(); l == nil || l.ID != "half" {
			t.Fatalf("%s: the leaf is %v, not the last line's entry", op, l)
		}
		if got := s.Tree().Get("half"); got == nil {
			t.Fatalf("%s: the Store does not see the last line's entry", op)
		}
		switch op {
		case "append":
			e, err := s.Append(session.Draft{Type: session.TypeCustom, Fields: map[string]any{"customType": "mine"}})
			if err != nil {
				t.Fatal(err)
			}
			if e[0].ParentID != "half" {
				t.Fatalf("the appended entry's parent is %v, not the last entry", e[0].ParentID)
			}
		case "rewrite":
			if err := rewriteSame(s); err != nil {
				t.Fatal(err)
			}
		case "catch-up":
			// A catch-up, not an open, meets the line: another process
			// wrote it after this Store read the file.
			s.Close()
			path2 := newSession(t, t.TempDir(), 3)
			s, err = files.Open(path2, files.Options{})
			if err != nil {
				t.Fatal(err)
			}
			path = path2
			writeRaw(t, path, piLine[:len(piLine)-1])
			e, err := s.Append(session.Draft{Type: session.TypeCustom, Fields: map[string]any{"customType": "mine"}})
			if err != nil {
				t.Fatal(err)
			}
			// The Store's own leaf stays its parent, as for any line
			// another process appends; the line must be in its view.
			if s.Tree().Get("half") == nil || e[0].Line != 6 {
				t.Fatalf("catch-up: the Store does not see the last line's entry (appended at line %d)", e[0].Line)
			}
		}
		s.Close()
		got := mustRead(t, path)
		if !bytes.HasSuffix(got, []byte("\n")) || bytes.Count(got, []byte(`"id":"half"`)) != 1 {
			t.Fatalf("%s: the file:\n%s", op, got)
		}
		f, err := session.Load(path)
		if err != nil || len(f.Warnings) > 0 {
			t.Fatalf("%s: %v %v", op, f.Warnings, err)
		}
		if _, err := os.Stat(path); err != nil {
			t.Fatal(err)
		}
	}
}
