package viewer

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/pith-dev/pith/store"
)

// FuzzReadAppended: a session read whole at some point and then through
// its appends — in any number of steps, torn lines included — ends with
// the entries, line numbers, leaf and snapshot a whole reading of the
// final bytes gives; and any bytes at all may follow without a panic.
func FuzzReadAppended(f *testing.F) {
	demo, err := os.ReadFile(filepath.Join("..", "examples", "demo-session.jsonl"))
	if err != nil {
		f.Fatal(err)
	}
	lines := bytes.SplitAfter(demo, []byte("\n"))
	f.Add(bytes.Join(lines[:min(8, len(lines))], nil), uint16(120), uint16(400))
	f.Add([]byte(tailHeader+entryLine("a", "", "one")+entryLine("b", "a", "two")+"x\n\n"+entryLine("c", "zz", "three")), uint16(93), uint16(200))
	f.Add([]byte(tailHeader+entryLine("a", "", "one")+entryLine("a", "a", "again")+entryLine("b", "a", "two")), uint16(230), uint16(231))
	f.Fuzz(func(t *testing.T, data []byte, cut1, cut2 uint16) {
		c1, c2 := min(int(cut1), len(data)), min(int(cut2), len(data))
		if c1 > c2 {
			c1, c2 = c2, c1
		}
		var shown []byte
		tail := Tail(func(after int) ([]byte, int, error) {
			out, n := store.TailOf(shown, after)
			return bytes.Clone(out), n, nil
		})
		shown = data[:c1]
		r, err := readWhole(tail)
		if err != nil {
			return // not a session yet
		}
		snap := newSnapshot(r.file, 1)
		for _, c := range []int{c2, len(data)} {
			shown = data[:c]
			next, changed, ok, err := readAppended(tail, r)
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				if next, err = readWhole(tail); err != nil {
					return // a torn header went on into something else
				}
				changed = true
			}
			if changed {
				// As Handler.reload: only an appended reading extends.
				if ext := snap.extend(next.file, 2); ok && ext != nil {
					snap = ext
				} else {
					snap = newSnapshot(next.file, 2)
				}
			}
			r = next
		}
		whole, err := readWhole(tail)
		if err != nil {
			t.Fatal(err)
		}
		if len(whole.file.Entries) != len(r.file.Entries) || whole.lines != r.lines || !bytes.Equal(whole.last, r.last) || whole.file.TornTail != r.file.TornTail {
			t.Fatalf("appended reading: %d entries, %d lines, torn %v; whole: %d, %d, %v",
				len(r.file.Entries), r.lines, r.file.TornTail, len(whole.file.Entries), whole.lines, whole.file.TornTail)
		}
		for i, e := range whole.file.Entries {
			g := r.file.Entries[i]
			if g.ID != e.ID || g.ParentID != e.ParentID || g.Line != e.Line || !bytes.Equal(g.Raw, e.Raw) {
				t.Fatalf("entry %d: %s (line %d), whole %s (line %d)", i, g.Raw, g.Line, e.Raw, e.Line)
			}
		}
		if want := newSnapshot(r.file, 2); !sameSnapshot(snap, want) {
			t.Fatal("the snapshot built through appends differs from the whole one")
		}
	})
}
