package branch

import "github.com/pith-dev/pith/core/session"

// DryRunReport is what a navigation would summarize, without a summarizer
// call or a write: the JSON `pith navigate --dry-run --json` prints.
type DryRunReport struct {
	OldLeafID string `json:"oldLeafId"`
	TargetID  string `json:"targetId"`
	// CommonAncestorID is null when the two positions share no entry.
	CommonAncestorID   *string `json:"commonAncestorId"`
	EntriesToSummarize int     `json:"entriesToSummarize"`
	// Budget is the token budget the branch was prepared under.
	Budget int `json:"budget"`
	// Messages and Tokens describe what the summarizer would get.
	Messages      int      `json:"messages"`
	Tokens        int      `json:"tokens"`
	ReadFiles     []string `json:"readFiles"`
	ModifiedFiles []string `json:"modifiedFiles"`
}

// DryRun collects and prepares the branch left by navigating from oldLeafID
// to targetID under budget tokens (≤ 0: no limit), as Navigate would before
// summarizing. Lists are never nil, so the JSON has [] rather than null.
func DryRun(tree *session.Tree, oldLeafID, targetID string, budget int) DryRunReport {
	entries, ancestor := CollectEntriesForBranchSummary(tree, oldLeafID, targetID)
	p := PrepareBranchEntries(entries, budget)
	r := DryRunReport{
		OldLeafID:          oldLeafID,
		TargetID:           targetID,
		EntriesToSummarize: len(entries),
		Budget:             budget,
		Messages:           len(p.Messages),
		Tokens:             p.TotalTokens,
		ReadFiles:          nonNilList(p.ReadFiles),
		ModifiedFiles:      nonNilList(p.ModifiedFiles),
	}
	if ancestor != "" {
		r.CommonAncestorID = &ancestor
	}
	return r
}
