package session

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestPathMemoMatchesAWalk: on trees grown by Add with children under
// the leaf, under older entries, under missing parents, under parents
// added later and with repeated ids, every Path answer equals the one a
// fresh tree (no memo yet) gives for the same leaf.
func TestPathMemoMatchesAWalk(t *testing.T) {
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 7))
		tree := NewTree(nil)
		ids := []string{}
		add := func() *Entry {
			e := &Entry{Type: TypeMessage, ID: fmt.Sprintf("e%d", len(tree.Entries))}
			switch r := rng.IntN(100); {
			case len(ids) == 0 || r < 3:
				// a root
			case r < 70:
				e.ParentID = ids[len(ids)-1] // under the leaf
			case r < 90:
				e.ParentID = ids[rng.IntN(len(ids))] // a branch
			case r < 94:
				e.ParentID = "missing"
			case r < 97:
				e.ParentID = fmt.Sprintf("e%d", len(tree.Entries)+1+rng.IntN(3)) // added later
			default:
				e.ID = ids[rng.IntN(len(ids))] // a repeated id
				e.ParentID = ids[len(ids)-1]
			}
			tree.Add(e)
			ids = append(ids, e.ID)
			return e
		}
		for range 300 {
			add()
			var leaf *Entry
			switch r := rng.IntN(10); {
			case r < 6:
				leaf = tree.Last()
			case r < 8:
				leaf = tree.Entries[rng.IntN(len(tree.Entries))]
			default:
				leaf = tree.Entries[max(0, len(tree.Entries)-1-rng.IntN(5))]
			}
			got := tree.Path(leaf)
			want := NewTree(slices.Clone(tree.Entries)).Path(leaf)
			if !slices.Equal(got, want) {
				t.Fatalf("seed %d, %d entries, leaf %s: memo gives %d entries, a walk %d", seed, len(tree.Entries), leaf.ID, len(got), len(want))
			}
			if cap(got) != len(got) {
				t.Fatalf("seed %d: a path with spare capacity (%d > %d): an append would write into a shared array", seed, cap(got), len(got))
			}
		}
	}
}

// TestPathMemoReplacedEntries: a tree whose Entries were replaced by
// another slice does not answer from the old one.
func TestPathMemoReplacedEntries(t *testing.T) {
	a := &Entry{ID: "a"}
	b := &Entry{ID: "b", ParentID: "a"}
	tree := NewTree([]*Entry{a, b})
	if got := tree.Path(b); len(got) != 2 {
		t.Fatalf("path: %d", len(got))
	}
	c := &Entry{ID: "c"}
	tree.Entries = []*Entry{c, b} // b's parent is gone now
	if got := tree.Path(b); len(got) != 1 || got[0] != b {
		t.Fatalf("after a replacement: %v", got)
	}
}

// BenchmarkPathAppend is the daemon's turn: an entry under the leaf, then
// its path. The cost per call must not grow with the session (compare the
// 1k and 100k figures); "walk" is a fresh walk each time, for comparison.
func BenchmarkPathAppend(b *testing.B) {
	for _, c := range []struct {
		name string
		size int
	}{{"memo", 1_000}, {"memo", 100_000}, {"walk", 1_000}, {"walk", 100_000}} {
		b.Run(fmt.Sprintf("%s/entries=%d", c.name, c.size), func(b *testing.B) {
			tree := NewTree(nil)
			for i := range c.size {
				e := &Entry{Type: TypeMessage, ID: fmt.Sprintf("e%06d", i)}
				if i > 0 {
					e.ParentID = tree.Last().ID
				}
				tree.Add(e)
			}
			tree.Path(tree.Last())
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				b.StopTimer()
				e := &Entry{Type: TypeMessage, ID: fmt.Sprintf("n%d", n), ParentID: tree.Last().ID}
				n++
				tree.Add(e)
				if c.name == "walk" {
					tree.lastPath.Store(nil)
				}
				b.StartTimer()
				if len(tree.Path(e)) < c.size {
					b.Fatal("short path")
				}
			}
		})
	}
}

// TestPathMemoConcurrentBranches: readers asking at once for the paths of
// several branches under the memo's leaf each get their own branch, and
// what one extension writes in place is never inside another's answer
// (run with -race).
func TestPathMemoConcurrentBranches(t *testing.T) {
	tree := NewTree(nil)
	for i := range 1000 {
		e := &Entry{Type: TypeMessage, ID: fmt.Sprintf("e%d", i)}
		if i > 0 {
			e.ParentID = tree.Last().ID
		}
		tree.Add(e)
	}
	trunk := tree.Last()
	tree.Path(trunk)
	tree.Path(tree.Entries[998]) // a memo whose array has room after it
	tree.Path(trunk)
	var tips []*Entry
	for b := range 8 {
		parent := trunk
		for d := range 5 {
			e := &Entry{Type: TypeMessage, ID: fmt.Sprintf("b%d-%d", b, d), ParentID: parent.ID}
			tree.Add(e)
			parent = e
		}
		tips = append(tips, parent)
	}
	want := make([][]*Entry, len(tips))
	for i, tip := range tips {
		want[i] = NewTree(slices.Clone(tree.Entries)).Path(tip)
	}
	done := make(chan error)
	for g := range 4 {
		go func() {
			for n := range 200 {
				i := (g + n) % len(tips)
				got := tree.Path(tips[i])
				if !slices.Equal(got, want[i]) {
					done <- fmt.Errorf("branch %d: a path of %d entries, want %d", i, len(got), len(want[i]))
					return
				}
			}
			done <- nil
		}()
	}
	for range 4 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	for i, tip := range tips {
		if got := tree.Path(tip); !slices.Equal(got, want[i]) {
			t.Fatalf("branch %d changed after the readers", i)
		}
	}
}
