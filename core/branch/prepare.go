package branch

import (
	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/core/tokens"
	"github.com/pith-dev/pith/core/transcript"
	"github.com/tidwall/gjson"
)

// Prepared is a branch made ready for the summarizer (docs/behaviour.md §11.3).
type Prepared struct {
	// Messages are the newest messages of the branch that fit the budget,
	// oldest first.
	Messages []session.Message
	// ReadFiles are files only read, ModifiedFiles files written or edited,
	// each sorted in UTF-16 code unit order like the reference's lists.
	ReadFiles     []string
	ModifiedFiles []string
	// TotalTokens is the estimate of Messages; it can exceed the budget by
	// one summary entry (the 90 % rule).
	TotalTokens int
}

// summaryShare is the part of the budget under which a compaction or branch
// summary is still taken although it does not fit: summaries carry a whole
// earlier stretch of work, so they are worth overshooting for.
const summaryShare = 0.9

// PrepareBranchEntries picks what of a branch the summarizer gets, exactly
// as the reference does (docs/behaviour.md §11.3):
//
//  1. the file lists stored in the details of earlier branch_summary
//     entries, unless a hook wrote them (their details are the hook's own);
//  2. then newest → oldest over the entries that yield a message (tool
//     results yield none: the assistant's call says what was done): each
//     first adds its file operations — even the entry that ends the walk —
//     then, if its tokens would take the total over tokenBudget, the walk
//     stops; a compaction or branch summary entry is still taken first when
//     the total so far is under 90 % of the budget. Otherwise the message is
//     put in front.
//
// tokenBudget ≤ 0 means no limit. entries are in chronological order, as
// CollectEntriesForBranchSummary returns them.
func PrepareBranchEntries(entries []*session.Entry, tokenBudget int) Prepared {
	ops := transcript.NewFileOps()
	for _, e := range entries {
		if e.Type != session.TypeBranchSummary || e.FromExtension() {
			continue
		}
		addDetails(ops, e.Get("details"))
	}

	var rev []session.Message // newest first; reversed at the end
	total := 0
	for i := len(entries) - 1; i >= 0; i-- {
		e := entries[i]
		m, ok := entryMessage(e)
		if !ok {
			continue
		}
		ops.AddMessage(m)
		n := tokens.Estimate(m.Raw)
		if tokenBudget > 0 && total+n > tokenBudget {
			summary := e.Type == session.TypeCompaction || e.Type == session.TypeBranchSummary
			if summary && float64(total) < summaryShare*float64(tokenBudget) {
				rev = append(rev, m)
				total += n
			}
			break
		}
		rev = append(rev, m)
		total += n
	}
	msgs := make([]session.Message, len(rev))
	for i, m := range rev {
		msgs[len(rev)-1-i] = m
	}
	p := Prepared{Messages: msgs, TotalTokens: total}
	p.ReadFiles, p.ModifiedFiles = ops.Lists()
	return p
}

// addDetails adds the file lists a branch summary stored in its details:
// readFiles as read, modifiedFiles as edited. Lists that are not arrays are
// ignored, as are entries that are not non-empty strings.
func addDetails(ops *transcript.FileOps, details gjson.Result) {
	for _, l := range []struct {
		key string
		set map[string]bool
	}{{"readFiles", ops.Read}, {"modifiedFiles", ops.Edited}} {
		list := details.Get(l.key)
		if !list.IsArray() {
			continue
		}
		list.ForEach(func(_, v gjson.Result) bool {
			if v.Type == gjson.String && v.Str != "" {
				l.set[v.Str] = true
			}
			return true
		})
	}
}

// entryMessage is the message an entry gives a branch summary. It differs
// from what the entry gives a context (session.EntryMessage): tool results
// give nothing, a compaction gives its summary, and a branch summary is
// kept even when empty (it then counts 0 tokens), all as in the reference.
func entryMessage(e *session.Entry) (session.Message, bool) {
	switch e.Type {
	case session.TypeMessage:
		if e.Role() == session.RoleToolResult {
			return session.Message{}, false
		}
		return session.EntryMessage(e)
	case session.TypeCustomMessage:
		return session.EntryMessage(e)
	case session.TypeBranchSummary:
		return session.NewBranchSummary(e.Get("summary").String(), e.Get("fromId").String(), e.Timestamp(), e.ID), true
	case session.TypeCompaction:
		return session.NewCompactionSummary(e.Get("summary").String(), int(e.Get("tokensBefore").Int()), e.Timestamp(), e.ID), true
	}
	return session.Message{}, false
}
