package transcript

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/pith-dev/pith/core/session"
)

// TestToolPathsFromScanMatchRaw: the tool calls recorded while a line is
// scanned give the same file operations as searching the message itself.
func TestToolPathsFromScanMatchRaw(t *testing.T) {
	files, _ := filepath.Glob("../compaction/testdata/generated/*.jsonl")
	if len(files) == 0 {
		t.Skip("no generated sessions")
	}
	for _, name := range files {
		f, err := session.Load(name)
		if err != nil {
			t.Fatal(err)
		}
		fromScan, fromRaw := NewFileOps(), NewFileOps()
		for _, e := range f.Entries {
			m, ok := session.EntryMessage(e)
			if !ok {
				continue
			}
			fromScan.AddMessage(m)
			m.ToolPaths, m.ToolPathsKnown = nil, false
			fromRaw.AddMessage(m)
		}
		r1, m1 := fromScan.Lists()
		r2, m2 := fromRaw.Lists()
		if !slices.Equal(r1, r2) || !slices.Equal(m1, m2) {
			t.Fatalf("%s: scan %v %v, raw %v %v", name, r1, m1, r2, m2)
		}
	}
}
