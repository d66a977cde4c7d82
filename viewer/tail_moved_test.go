package viewer

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestReadAppendedAfterARewriteThatMovedLines: a stored session is read
// by line numbers. Another host's rewrite drops the blank lines, so every
// later line moves up, and appends then bring the count back past what
// the viewer read: the lines after its count are not the new ones. Until
// the rewrite's event comes (or when it is lost), a Refresh must not
// skip or repeat entries.
func TestReadAppendedAfterARewriteThatMovedLines(t *testing.T) {
	var before, after strings.Builder
	before.WriteString(tailHeader)
	after.WriteString(tailHeader)
	parent := ""
	for i := range 6 {
		id := fmt.Sprintf("e%d", i)
		l := entryLine(id, parent, "text "+id)
		before.WriteString(l + "\n") // a blank line after each
		after.WriteString(l)
		parent = id
	}
	for i := range 8 {
		id := fmt.Sprintf("n%d", i)
		after.WriteString(entryLine(id, parent, "new "+id))
		parent = id
	}
	m := &memTail{}
	m.set(before.String())
	h, err := New(Options{Name: "s.jsonl", Tail: m.tail, Debounce: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if len(entries(h)) != 6 {
		t.Fatalf("%d entries read, want 6", len(entries(h)))
	}
	m.set(after.String())
	if err := h.reload(false); err != nil {
		t.Fatal(err)
	}
	got := entries(h)
	if len(got) != 14 || h.LeafID() != "n7" {
		ids := make([]string, len(got))
		for i, e := range got {
			ids[i] = e.ID
		}
		t.Fatalf("after the rewrite and appends the viewer has %v (leaf %s), want e0..e5 n0..n7", ids, h.LeafID())
	}
}
