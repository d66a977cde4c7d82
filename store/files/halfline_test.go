package files_test

import (
	"bytes"
	"os"
	"testing"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/internal/faultfs"
	"github.com/pith-dev/pith/store/files"
)

// The tests of this file catch pi's unlocked append halfway. A write()
// that crosses a page boundary becomes visible in parts (the kernel
// raises the size page by page), so under load a reader can see a line
// without its end, and the rest arrives a moment later. This is what made
// cmd/host's TestRewritesKeepConcurrentAppends fail now and then: the
// rewrite wrote the half line it had read and then carried the finished
// line over again.

const piLine = `{"type":"custom","id":"half","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","customType":"pi","data":{}}` + "\n"

// cuts are where the line is seen cut: before its id, inside it, after
// it, and just before the newline (a whole JSON object).
var cuts = []int{1, 25, 60, len(piLine) - 1}

func writeRaw(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

// checkWhole fails unless the file parses without a warning into want
// entries and holds the id exactly once.
func checkWhole(t *testing.T, path, id string, want int) {
	t.Helper()
	got := mustRead(t, path)
	if c := bytes.Count(got, []byte(`"id":"`+id+`"`)); c != 1 {
		t.Fatalf("%s is in the file %d times:\n%s", id, c, got)
	}
	f, err := session.Load(path)
	if err != nil || len(f.Warnings) > 0 || len(f.Entries) != want {
		t.Fatalf("%d entries of %d, warnings %v, %v", len(f.Entries), want, f.Warnings, err)
	}
}

// TestRewriteOfHalfWrittenLine: the Store reads the file while pi's line
// is half there, pi finishes it, the Store rewrites (prune's protocol) or
// migrates: the line is in the new file once and whole.
func TestRewriteOfHalfWrittenLine(t *testing.T) {
	for _, v2 := range []bool{false, true} {
		for _, cut := range cuts {
			path := newSession(t, t.TempDir(), 10)
			if v2 {
				os.WriteFile(path, bytes.Replace(mustRead(t, path), []byte(`"version":3`), []byte(`"version":2`), 1), 0o644)
			}
			writeRaw(t, path, piLine[:cut])
			s, err := files.Open(path, files.Options{})
			if err != nil {
				t.Fatal(err)
			}
			writeRaw(t, path, piLine[cut:])
			if v2 {
				_, err = s.Migrate()
			} else {
				err = rewriteSame(s)
			}
			s.Close()
			if err != nil {
				t.Fatalf("v2 %v, cut %d: %v", v2, cut, err)
			}
			checkWhole(t, path, "half", 11)
		}
	}
}

// TestAppendAfterHalfWrittenLine: a Store that fenced off a half line
// (pi finished it meanwhile) and appended keeps an exact account of what
// it read: its next rewrite copies nothing twice and its view has every
// entry.
func TestAppendAfterHalfWrittenLine(t *testing.T) {
	for _, cut := range cuts {
		path := newSession(t, t.TempDir(), 10)
		writeRaw(t, path, piLine[:cut])
		s, err := files.Open(path, files.Options{})
		if err != nil {
			t.Fatal(err)
		}
		writeRaw(t, path, piLine[cut:])
		if _, err := s.Append(session.Draft{Type: session.TypeCustom, Fields: map[string]any{"customType": "mine"}}); err != nil {
			t.Fatal(err)
		}
		if n := len(s.File().Entries); n != 12 {
			t.Fatalf("cut %d: the Store sees %d entries of 12", cut, n)
		}
		err = rewriteSame(s)
		s.Close()
		if err != nil {
			t.Fatalf("cut %d: %v", cut, err)
		}
		checkWhole(t, path, "half", 12)
	}
}

// TestAppendRacedByUnlockedWriter: pi appends after the Store read the
// file under its lock and before the Store's own write lands: the Store's
// next rewrite still has every line once.
func TestAppendRacedByUnlockedWriter(t *testing.T) {
	path := newSession(t, t.TempDir(), 10)
	c := faultfs.New()
	c.Before = func(op faultfs.Op, n int) {
		if op == faultfs.Write && n == 1 {
			writeRaw(t, path, piLine)
		}
	}
	s, err := files.Open(path, files.Options{WrapFS: c.Wrap})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Append(session.Draft{Type: session.TypeCustom, Fields: map[string]any{"customType": "mine"}}); err != nil {
		t.Fatal(err)
	}
	if n := len(s.File().Entries); n != 12 {
		t.Fatalf("the Store sees %d entries of 12", n)
	}
	if err := rewriteSame(s); err != nil {
		t.Fatal(err)
	}
	checkWhole(t, path, "half", 12)
}
