package compaction

import (
	"encoding/json"
	"fmt"

	"github.com/pith-dev/pith/core/session"
)

// compactionFields is the body of a compaction entry, in the order pi
// writes it (SPEC §1, §10).
type compactionFields struct {
	Summary          string          `json:"summary"`
	ShortSummary     string          `json:"shortSummary,omitempty"`
	FirstKeptEntryID string          `json:"firstKeptEntryId"`
	TokensBefore     int             `json:"tokensBefore"`
	Details          any             `json:"details,omitempty"`
	PreserveData     json.RawMessage `json:"preserveData,omitempty"`
	FromHook         bool            `json:"fromHook,omitempty"`
}

// CompactionDraft is the compaction entry to append for res: details are
// res.RawDetails when set (a plugin's own), else res.Details. fromHook marks
// a compaction a plugin supplied; preserveData is the merged plugin data of
// session.compacting, nil for none.
func CompactionDraft(res *Result, fromHook bool, preserveData json.RawMessage) session.Draft {
	var details any = res.Details
	if len(res.RawDetails) > 0 {
		details = res.RawDetails
	}
	return session.Draft{
		Type: session.TypeCompaction,
		Fields: compactionFields{
			Summary:          res.Summary,
			ShortSummary:     res.ShortSummary,
			FirstKeptEntryID: res.FirstKeptEntryID,
			TokensBefore:     res.TokensBefore,
			Details:          details,
			PreserveData:     preserveData,
			FromHook:         fromHook,
		},
	}
}

// Persist appends the compaction for res as a child of the leaf prep was
// made for, and returns the new entry and the context rebuilt from it
// (SPEC §10). It refuses when the session's leaf moved on while the summary
// was generated: the summary would describe another branch.
//
// extra entries (the explore strategy's auto-read custom_message) follow
// the compaction in the same single write, so a failure leaves none of
// them; the context is then rebuilt from the last one.
func Persist(store *session.Store, prep *Preparation, res *Result, fromHook bool, preserveData json.RawMessage, extra ...session.Draft) (*session.Entry, session.Context, error) {
	leaf := store.Leaf()
	if leaf == nil || leaf.ID != prep.LeafID {
		return nil, session.Context{}, fmt.Errorf("compaction: the session moved on from entry %s while the summary was made; compact again", prep.LeafID)
	}
	if res.FirstKeptEntryID == "" || !store.Tree().Has(res.FirstKeptEntryID) {
		return nil, session.Context{}, fmt.Errorf("compaction: first kept entry %q is not in the session", res.FirstKeptEntryID)
	}
	entries, err := store.Append(append([]session.Draft{CompactionDraft(res, fromHook, preserveData)}, extra...)...)
	if err != nil {
		return nil, session.Context{}, fmt.Errorf("compaction: %w", err)
	}
	return entries[0], store.Tree().BuildContext(entries[len(entries)-1].ID), nil
}

// ValidateSupplied checks a compaction a plugin supplied in
// session_before_compact (SPEC §13): a non-empty summary no longer than the
// history cap (0.8 × reserveTokens), and a firstKeptEntryId that is on path
// within the range being compacted. path is the one prep was made from.
func ValidateSupplied(path []*session.Entry, prep *Preparation, summary, firstKeptEntryID string) error {
	if err := Validate(summarizeResult(summary), historyCap(prep.Settings.ReserveTokens)); err != nil {
		return fmt.Errorf("supplied compaction: %w", err)
	}
	for i := prep.RangeStart; i < len(path); i++ {
		if path[i].ID == firstKeptEntryID {
			return nil
		}
	}
	return fmt.Errorf("supplied compaction: %w: firstKeptEntryId %q is not on the compacted part of the path", ErrInvalidSummary, firstKeptEntryID)
}
