package branch

import "github.com/pith-dev/pith/core/session"

// CollectEntriesForBranchSummary returns the entries of the branch being
// left when navigating from oldLeafID to targetID (docs/behaviour.md §11.1): from the old
// leaf back to the deepest common ancestor of the two (not included), in
// chronological order, and that ancestor's id ("" when the two share none).
// Compactions, labels and other metadata on the way are included; the walk
// does not stop at a compaction, whose summary becomes part of the branch's
// context.
//
// An empty oldLeafID gives nothing. When the target lies on the old path
// (navigating back), the entries below it are the branch; when the old leaf
// is an ancestor of the target, there is nothing to summarize. An unknown
// target shares no ancestor, so the whole old path is returned, as the
// reference does; Navigate rejects unknown targets before collecting.
func CollectEntriesForBranchSummary(tree *session.Tree, oldLeafID, targetID string) (entries []*session.Entry, commonAncestorID string) {
	if oldLeafID == "" {
		return nil, ""
	}
	oldPath := tree.Path(tree.Get(oldLeafID))
	targetPath := tree.Path(tree.Get(targetID))
	// Both paths are root-first and the parent walk is deterministic, so
	// two paths that share an entry share everything above it: the common
	// ancestor ends their common prefix. Only parent links that loop (cut
	// at different places by Path) break that; then search by set.
	start := 0
	if len(oldPath) > 0 && len(targetPath) > 0 && oldPath[0] == targetPath[0] {
		for start < len(oldPath) && start < len(targetPath) && oldPath[start] == targetPath[start] {
			start++
		}
	} else {
		start = sharedBySet(oldPath, targetPath)
	}
	if start == 0 {
		return oldPath, ""
	}
	return oldPath[start:], oldPath[start-1].ID
}

// sharedBySet returns 1 + the index in oldPath of the deepest entry of
// targetPath that is also on oldPath, or 0 when they share none.
func sharedBySet(oldPath, targetPath []*session.Entry) int {
	if len(oldPath) == 0 || len(targetPath) == 0 {
		return 0
	}
	index := make(map[*session.Entry]int, len(oldPath))
	for i, e := range oldPath {
		index[e] = i
	}
	for i := len(targetPath) - 1; i >= 0; i-- {
		if at, ok := index[targetPath[i]]; ok {
			return at + 1
		}
	}
	return 0
}
