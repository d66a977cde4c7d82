package branch

import (
	"fmt"
	"slices"
	"testing"

	"github.com/pith-dev/pith/core/session"
)

// TestPrepareBranchFromExtension: a branch summary marked fromExtension:
// true counts like fromHook: true — its file lists are not carried into
// the next branch summary; a generated one's are.
func TestPrepareBranchFromExtension(t *testing.T) {
	for _, tc := range []struct {
		mark  string
		carry bool
	}{{`"fromExtension":true`, false}, {`"fromHook":true`, false}, {`"fromHook":false`, true}} {
		data := `{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}` + "\n" +
			`{"type":"message","id":"u1","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":"hi","timestamp":1}}` + "\n" +
			fmt.Sprintf(`{"type":"branch_summary","id":"b1","parentId":"u1","timestamp":"2026-01-01T00:00:00.000Z","fromId":"u1","summary":"s","details":{"readFiles":["old.go"],"modifiedFiles":[]},%s}`, tc.mark) + "\n"
		f, err := session.Parse([]byte(data))
		if err != nil {
			t.Fatal(err)
		}
		p := PrepareBranchEntries(f.Entries, 0)
		if got := slices.Contains(p.ReadFiles, "old.go"); got != tc.carry {
			t.Errorf("%s: old.go carried %v, want %v", tc.mark, got, tc.carry)
		}
	}
}
