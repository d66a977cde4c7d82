package compaction

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/core/summary"
)

// compactionFields is the body of a compaction entry, in the order pi
// writes it (docs/behaviour.md §1, §10).
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

// ErrDiscarded is a compaction that was not saved because the session
// changed under it while the summary was made; the file is unchanged.
var ErrDiscarded = errors.New("compaction discarded")

// Persist appends the compaction for res and returns the new entry and the
// context rebuilt from it (docs/behaviour.md §10). Where it goes is decided under the
// file's lock, against the session as it is at that moment: entries
// appended below the prepared leaf since (by this process or another) stay
// in the context — the compaction becomes a child of the newest of them,
// and its firstKeptEntryId is still on the path. If the session moved to
// another branch, or a compaction was appended since the preparation, the
// result describes a history that is no longer the session's, and it is
// discarded with ErrDiscarded: two concurrent compactions never both land.
//
// extra entries (the explore strategy's auto-read custom_message) follow
// the compaction in the same single write, so a failure leaves none of
// them; the context is then rebuilt from the last one.
func Persist(store session.Backend, prep *Preparation, res *Result, fromHook bool, preserveData json.RawMessage, extra ...session.Draft) (*session.Entry, session.Context, error) {
	if res.FirstKeptEntryID == "" || !store.Tree().Has(res.FirstKeptEntryID) {
		return nil, session.Context{}, fmt.Errorf("compaction: first kept entry %q is not in the session", res.FirstKeptEntryID)
	}
	leaf := store.Leaf()
	parent := func(t *session.Tree, last *session.Entry) (string, error) {
		// t is the file as it is now; a file replaced meanwhile (moved or
		// copied over) may no longer have the entries the summary was
		// made from, and then the compaction would dangle.
		for _, id := range []string{prep.LeafID, res.FirstKeptEntryID} {
			if !t.Has(id) {
				return "", fmt.Errorf("%w: entry %s is no longer in the session (the file was replaced while the summary was made); compact again", ErrDiscarded, id)
			}
		}
		if leaf != nil {
			leaf = t.Get(leaf.ID) // the entry as the file has it now
		}
		if leaf == nil || !descends(t, leaf, prep.LeafID) {
			return "", fmt.Errorf("%w: this session moved to another entry than %s while the summary was made; compact again", ErrDiscarded, prep.LeafID)
		}
		if prep.FileEntries > 0 && prep.FileEntries <= len(t.Entries) {
			for _, e := range t.Entries[prep.FileEntries:] {
				if e.Type == session.TypeCompaction {
					return "", fmt.Errorf("%w: another compaction (entry %s) was saved while the summary was made", ErrDiscarded, e.ID)
				}
			}
			if len(t.Entries) == prep.FileEntries {
				return leaf.ID, nil
			}
		}
		if last != nil && descends(t, last, leaf.ID) {
			return last.ID, nil // entries appended below the leaf stay in the context
		}
		if prep.FileEntries > 0 {
			return "", fmt.Errorf("%w: entries were appended on another branch (the newest is %s) while the summary was made; compact again", ErrDiscarded, last.ID)
		}
		return leaf.ID, nil
	}
	entries, err := store.AppendWith(parent, append([]session.Draft{CompactionDraft(res, fromHook, preserveData)}, extra...)...)
	if err != nil {
		return nil, session.Context{}, fmt.Errorf("compaction: %w", err)
	}
	return entries[0], store.Tree().BuildContext(entries[len(entries)-1].ID), nil
}

// descends reports whether e is ancestorID or below it, with no compaction
// between them.
func descends(t *session.Tree, e *session.Entry, ancestorID string) bool {
	for n := 0; e != nil && n <= len(t.Entries); n++ {
		if e.ID == ancestorID {
			return true
		}
		if e.Type == session.TypeCompaction {
			return false
		}
		e = t.Get(e.ParentID)
	}
	return false
}

// ValidateSupplied checks a compaction a plugin supplied in
// session_before_compact (docs/behaviour.md §13): a non-empty summary no longer than the
// history cap (0.8 × reserveTokens), and a firstKeptEntryId that is on path
// within the range being compacted. path is the one prep was made from.
func ValidateSupplied(path []*session.Entry, prep *Preparation, text, firstKeptEntryID string) error {
	if err := summary.Validate(summarizeResult(text), historyCap(prep.Settings.ReserveTokens)); err != nil {
		return fmt.Errorf("supplied compaction: %w", err)
	}
	for i := prep.RangeStart; i < len(path); i++ {
		if path[i].ID == firstKeptEntryID {
			return nil
		}
	}
	return fmt.Errorf("supplied compaction: %w: firstKeptEntryId %q is not on the compacted part of the path", summary.ErrInvalidSummary, firstKeptEntryID)
}
