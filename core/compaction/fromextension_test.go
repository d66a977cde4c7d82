package compaction

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/pith-dev/pith/core/session"
)

// TestPrepareFromExtensionNotCarried: a previous compaction marked
// fromExtension: true is an extension's, like fromHook: true — its file
// lists are its own and are not carried into the next compaction's; one
// the summarizer made is carried, also when pi wrote one Pith proposed
// (fromHook true, details.generatedBy "pith").
func TestPrepareFromExtensionNotCarried(t *testing.T) {
	for _, tc := range []struct {
		mark  string
		carry bool
	}{{`"fromExtension":true`, false}, {`"fromHook":true`, false}, {`"fromExtension":false`, true},
		{`"fromHook":true,"details":{"readFiles":["old.go"],"modifiedFiles":[],"generatedBy":"pith"}`, true}} {
		var b strings.Builder
		b.WriteString(`{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}` + "\n")
		parent := ""
		line := func(id, body string) {
			fmt.Fprintf(&b, `{"type":"message","id":%q,"parentId":%q,"timestamp":"2026-01-01T00:00:00.000Z","message":%s}`+"\n", id, parent, body)
			parent = id
		}
		user := func(id string) {
			line(id, `{"role":"user","content":"`+strings.Repeat("word ", 400)+`","timestamp":1}`)
		}
		user("u1")
		fmt.Fprintf(&b, `{"type":"compaction","id":"c1","parentId":"u1","timestamp":"2026-01-01T00:00:00.000Z","summary":"s","firstKeptEntryId":"u1","tokensBefore":10,%s}`+"\n", details(tc.mark))
		parent = "c1"
		for i := range 6 {
			user(fmt.Sprintf("u%d", i+2))
		}
		f, err := session.Parse([]byte(b.String()))
		if err != nil {
			t.Fatal(err)
		}
		tree := session.NewTree(f.Entries)
		st := DefaultSettings()
		st.KeepRecentTokens, st.CalibrateKeepRecent = 500, false
		prep, err := Prepare(tree.Path(tree.Last()), st)
		if err != nil {
			t.Fatal(err)
		}
		if got := slices.Contains(prep.ReadFiles, "old.go"); got != tc.carry {
			t.Errorf("%s: old.go carried %v, want %v (%v)", tc.mark, got, tc.carry, prep.ReadFiles)
		}
	}
}

// details is mark with the previous compaction's details before it,
// unless mark has its own.
func details(mark string) string {
	if strings.Contains(mark, `"details"`) {
		return mark
	}
	return `"details":{"readFiles":["old.go"],"modifiedFiles":[]},` + mark
}
