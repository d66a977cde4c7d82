package branch

import (
	"fmt"
	"slices"
	"testing"
	"unicode/utf16"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/core/tokens"
	"github.com/pith-dev/pith/core/transcript"
)

// generatedFiles are the 36 branchy sessions of testdata/generated.
func generatedFiles() []string {
	files := make([]string, 36)
	for i := range files {
		files[i] = fmt.Sprintf("gen-%03d.jsonl", i)
	}
	return files
}

// checkInvariants states what Collect and Prepare guarantee for any pair of
// positions and any budget, independently of how they compute it.
func checkInvariants(t *testing.T, tree *session.Tree, oldLeaf, target *session.Entry, budget int) {
	t.Helper()
	entries, ancestor := CollectEntriesForBranchSummary(tree, oldLeaf.ID, target.ID)

	// The entries are the old path minus the target's path, in order.
	onTarget := map[*session.Entry]bool{}
	for _, e := range tree.Path(target) {
		onTarget[e] = true
	}
	var want []*session.Entry
	for _, e := range tree.Path(oldLeaf) {
		if !onTarget[e] {
			want = append(want, e)
		}
	}
	if !slices.Equal(entries, want) {
		t.Fatalf("%s → %s: entries %v, want the old path minus the target's %v", oldLeaf.ID, target.ID, entryIDs(entries), entryIDs(want))
	}
	if ca := tree.CommonAncestor(oldLeaf, target); (ca == nil) != (ancestor == "") || (ca != nil && ca.ID != ancestor) {
		t.Fatalf("%s → %s: common ancestor %q, tree says %v", oldLeaf.ID, target.ID, ancestor, ca)
	}
	if len(entries) > 0 && entries[0].ParentID != ancestor {
		t.Fatalf("%s → %s: first entry's parent %q is not the ancestor %q", oldLeaf.ID, target.ID, entries[0].ParentID, ancestor)
	}

	// The messages are the newest messages of the branch, the total is
	// their estimate, and only a summary taken under the 90 % rule may
	// take it over the budget.
	p := PrepareBranchEntries(entries, budget)
	var all []session.Message
	for _, e := range entries {
		if m, ok := entryMessage(e); ok {
			all = append(all, m)
		}
	}
	if len(p.Messages) > len(all) {
		t.Fatalf("%d messages from %d", len(p.Messages), len(all))
	}
	suffix := all[len(all)-len(p.Messages):]
	total := 0
	for i, m := range p.Messages {
		if m.EntryID != suffix[i].EntryID {
			t.Fatalf("message %d is from %s, want the newest messages (%s)", i, m.EntryID, suffix[i].EntryID)
		}
		total += tokens.Estimate(m.Raw)
	}
	if total != p.TotalTokens {
		t.Fatalf("total %d, messages add up to %d", p.TotalTokens, total)
	}
	if budget > 0 && total > budget {
		first := p.Messages[0]
		rest := total - tokens.Estimate(first.Raw)
		if (first.Role != session.RoleCompactionSummary && first.Role != session.RoleBranchSummary) || float64(rest) >= 0.9*float64(budget) {
			t.Fatalf("over the budget %d with %d tokens, first message %s", budget, total, first.Role)
		}
	}
	if budget <= 0 && len(p.Messages) != len(all) {
		t.Fatalf("no budget but %d of %d messages", len(p.Messages), len(all))
	}
	// File lists: sorted, no duplicates, disjoint.
	for _, l := range [][]string{p.ReadFiles, p.ModifiedFiles} {
		if !slices.IsSortedFunc(l, compareUnits) || len(slices.Compact(slices.Clone(l))) != len(l) {
			t.Fatalf("file list %q not sorted or has duplicates", l)
		}
	}
	for _, f := range p.ReadFiles {
		if slices.Contains(p.ModifiedFiles, f) {
			t.Fatalf("%q both read and modified", f)
		}
	}
	// Every assistant tool call in the taken messages is in the lists.
	ops := transcript.NewFileOps()
	for _, m := range p.Messages {
		ops.AddMessage(m)
	}
	for f := range ops.Read {
		if !slices.Contains(p.ReadFiles, f) && !slices.Contains(p.ModifiedFiles, f) {
			t.Fatalf("read of %q lost", f)
		}
	}
	for _, set := range []map[string]bool{ops.Written, ops.Edited} {
		for f := range set {
			if !slices.Contains(p.ModifiedFiles, f) {
				t.Fatalf("modification of %q lost", f)
			}
		}
	}
}

// compareUnits orders strings as JavaScript does, by UTF-16 code units.
func compareUnits(a, b string) int {
	return slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
}

// FuzzCollectPrepare checks the invariants for arbitrary (old leaf, target,
// budget) triples over the generated sessions. The seed corpus runs with
// go test; `go test -fuzz FuzzCollectPrepare ./core/branch` explores more.
func FuzzCollectPrepare(f *testing.F) {
	for i := range 36 {
		f.Add(uint16(i), uint32(i*7919), uint32(i*104729), int32(i*997%5000))
	}
	f.Add(uint16(3), uint32(0), uint32(1), int32(0))
	f.Add(uint16(5), uint32(1<<31), uint32(12), int32(-1))
	files := generatedFiles()
	f.Fuzz(func(t *testing.T, file uint16, old, target uint32, budget int32) {
		tree := generatedTree(t, files[int(file)%len(files)])
		n := uint32(len(tree.Entries))
		checkInvariants(t, tree, tree.Entries[old%n], tree.Entries[target%n], int(budget))
	})
}

// TestInvariantsAllPairs runs the invariants on every pair of positions of
// a small generated session, under a budget that cycles through none, a
// tight one and the default.
func TestInvariantsAllPairs(t *testing.T) {
	for _, file := range []string{"gen-001.jsonl"} {
		tree := generatedTree(t, file)
		budgets := []int{0, 300, DefaultContextWindow - DefaultReserveTokens}
		for i, old := range tree.Entries {
			for j, target := range tree.Entries {
				checkInvariants(t, tree, old, target, budgets[(i+j)%len(budgets)])
			}
		}
	}
}
