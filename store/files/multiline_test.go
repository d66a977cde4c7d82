package files_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/store/files"
)

// twoLines is an append of a compaction and the message that belongs to
// it (the files read back after it), as one write.
func twoLines() (first, all []byte) {
	first = []byte(`{"type":"compaction","id":"c0000001","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","summary":"S","firstKeptEntryId":"x","tokensBefore":1}` + "\n")
	second := `{"type":"custom_message","id":"c0000002","parentId":"c0000001","timestamp":"2026-01-01T00:00:00.000Z","customType":"pith.rehydrate","content":"` +
		strings.Repeat("y", 20000) + `","display":false}` + "\n"
	return first, append(bytes.Clone(first), second...)
}

// TestTornAppendOfSeveralLines: a kill that cuts an append of several
// lines after its first line — a compaction whole, the message that
// belongs to it cut, or not begun — is undone by the next writer like a
// torn single line: it was left in place (the compaction without its
// message stayed, the cut message became a malformed line) because a
// newline inside the piece looked like another writer's line. A line
// another writer did append after the piece is still never cut off.
func TestTornAppendOfSeveralLines(t *testing.T) {
	first, all := twoLines()
	for _, tc := range []struct {
		name  string
		cut   int
		piAdd bool
		undo  bool
	}{
		{"cut in the second line", len(first) + 4096, false, true},
		{"cut after the first line", len(first), false, true},
		{"cut in the second line, pi after", len(first) + 4096, true, false},
		{"cut after the first line, pi after", len(first), true, false},
	} {
		path := newSession(t, t.TempDir(), 3)
		orig := mustRead(t, path)
		if err := files.SimulateTornAppend(path, all, tc.cut); err != nil {
			t.Fatal(err)
		}
		if tc.piAdd {
			piAppend(t, path, "0000aaaa")
		}
		before := mustRead(t, path)
		s, err := files.Open(path, files.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Append(session.Draft{Type: session.TypeCustom, Fields: map[string]any{"customType": "next"}}); err != nil {
			t.Fatal(err)
		}
		s.Close()
		got := mustRead(t, path)
		if tc.undo {
			onlyWholeLinesAfter(t, got, orig, 1)
			continue
		}
		if !bytes.HasPrefix(got, before) || !bytes.Contains(got, []byte(`"id":"0000aaaa"`)) {
			t.Fatalf("%s: the piece with another writer's line after it was cut:\n%q", tc.name, got)
		}
	}
}
