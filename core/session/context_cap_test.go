package session_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pith-dev/pith/core/session"
)

// TestBuildContextRoomForTheContext: after a compaction the context's
// slice has room for what it holds (the summary, the kept entries and
// those after), not for the whole path, on a tree whose index finds the
// kept entry from the end and on one that scans from the root. Engines
// build a context at every compaction, and one sized by the path grew
// with the session.
func TestBuildContextRoomForTheContext(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"type":"session","version":3,"id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/"}` + "\n")
	parent := "null"
	line := func(typ, id, fields string) {
		fmt.Fprintf(&b, `{"type":%q,"id":%q,"parentId":%s,"timestamp":"2025-01-01T00:00:01.000Z",%s}`+"\n", typ, id, parent, fields)
		parent = fmt.Sprintf("%q", id)
	}
	const long = 1000
	for i := range long {
		line("message", fmt.Sprintf("m%04d", i), fmt.Sprintf(`"message":{"role":"user","content":"m%d","timestamp":1}`, i))
	}
	line("compaction", "c", `"summary":"so far","firstKeptEntryId":"m0997","tokensBefore":5000`)
	line("message", "after", `"message":{"role":"user","content":"after","timestamp":2}`)
	f, err := session.Parse([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	indexed := session.NewTree(f.Entries)
	indexed.Get("m0000")
	for name, tree := range map[string]*session.Tree{"indexed": indexed, "fresh": session.NewTree(f.Entries)} {
		ctx := tree.BuildContext("after")
		// The summary, m0997..m0999, after.
		if len(ctx.Messages) != 5 || ctx.SinceCompaction != 4 {
			t.Fatalf("%s: %d messages, %d since the compaction; want 5, 4", name, len(ctx.Messages), ctx.SinceCompaction)
		}
		if c := cap(ctx.Messages); c > 5 {
			t.Errorf("%s: room for %d messages on a path of %d: want at most the 5 it holds", name, c, len(ctx.Path))
		}
	}
}
