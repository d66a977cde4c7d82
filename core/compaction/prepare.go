package compaction

import (
	"errors"
	"fmt"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/core/tokens"
	"github.com/pith-dev/pith/core/transcript"
)

// ErrNothingToCompact is returned (wrapped with the reason) when a path has
// nothing a compaction could summarize. Callers branch on it with errors.Is.
var ErrNothingToCompact = errors.New("nothing to compact")

// Settings are the compaction settings of docs/behaviour.md §14 this package uses.
type Settings struct {
	// ReserveTokens is kept free in the context window for the summary
	// request's output and the next turn.
	ReserveTokens int `json:"reserveTokens"`
	// KeepRecentTokens is how much recent conversation stays verbatim.
	KeepRecentTokens int `json:"keepRecentTokens"`
	// CalibrateKeepRecent scales KeepRecentTokens by how much the chars/4
	// estimate undercounts the provider's real token usage (docs/behaviour.md §5.3).
	// The zero Settings leave it off; DefaultSettings turns it on.
	CalibrateKeepRecent bool `json:"calibrateKeepRecent"`
	// CutBeforeTrailingResults: when the recent budget fills inside the
	// tool results that end the path, cut before the call that produced
	// them instead of keeping everything. The reference keeps everything,
	// so one tool output larger than keepRecentTokens leaves nothing to
	// compact and an automatic compaction cannot free any room. Off in
	// the zero Settings (the reference's behaviour, what the conformance
	// tests compare); on in DefaultSettings and in the engine.
	CutBeforeTrailingResults bool `json:"cutBeforeTrailingResults"`
	// CalibrationMethod is CalibrationDelta (also for "") or
	// CalibrationTotal; see Calibrate.
	CalibrationMethod string `json:"calibrationMethod,omitempty"`
	// FirstKeptEntryID, when set, is the cut, decided by the program that
	// owns the session (pi's preparation, honoured by
	// compaction.honourPiCut) instead of found from KeepRecentTokens; it
	// must be a valid cut point (ErrCutRefused otherwise).
	FirstKeptEntryID string `json:"firstKeptEntryId,omitempty"`
}

// DefaultSettings are the defaults of docs/behaviour.md §14.
func DefaultSettings() Settings {
	return Settings{ReserveTokens: 16384, KeepRecentTokens: 20000, CalibrateKeepRecent: true, CutBeforeTrailingResults: true}
}

// Preparation is everything a compaction needs before the summarizer runs
// (docs/behaviour.md §5). It is also the payload of the session_before_compact hook.
type Preparation struct {
	// LeafID is the last path entry: the compaction entry will be its child.
	LeafID string
	// RangeStart is the path index where summarizing starts (after the
	// previous compaction's summarized part).
	RangeStart int
	// Cut is the cut point; FirstKeptEntryID the id of the entry at it.
	Cut              CutPoint
	FirstKeptEntryID string
	// MessagesToSummarize are the messages before the cut (before the turn
	// start when the turn is split); TurnPrefixMessages the split turn's
	// early part; RecentMessages what stays verbatim.
	MessagesToSummarize []session.Message
	TurnPrefixMessages  []session.Message
	RecentMessages      []session.Message
	// TokensBefore is the context size before compaction (docs/behaviour.md §3).
	TokensBefore int
	// PreviousSummary is the summary of the previous compaction on the
	// path, "" when there is none.
	PreviousSummary string
	// FileOps are the files touched in the summarized part (plus what the
	// previous compaction recorded); ReadFiles and ModifiedFiles the lists.
	FileOps       *transcript.FileOps
	ReadFiles     []string
	ModifiedFiles []string
	// KeepRecentTokens is the budget actually used for the cut, after
	// calibration.
	KeepRecentTokens int
	Settings         Settings
	// Calibration is how KeepRecentTokens was derived (zero when
	// calibration is off).
	Calibration Calibration
	// FileEntries is how many entries the session file had when this
	// preparation was made (set by the caller; 0 means unknown). Persist
	// looks at the entries appended after them to decide where the
	// compaction goes.
	FileEntries int
}

// IsSplitTurn reports whether the cut falls inside a turn.
func (p *Preparation) IsSplitTurn() bool { return p.Cut.IsSplitTurn }

// Prepare builds the preparation for compacting path (root → leaf) (docs/behaviour.md
// §5). When there is nothing to summarize it returns an error wrapping
// ErrNothingToCompact that says why.
func Prepare(path []*session.Entry, settings Settings) (*Preparation, error) {
	if len(path) == 0 {
		return nil, fmt.Errorf("%w: empty session", ErrNothingToCompact)
	}
	last := path[len(path)-1]
	if last.Type == session.TypeCompaction {
		return nil, fmt.Errorf("%w: already compacted", ErrNothingToCompact)
	}
	prep := &Preparation{LeafID: last.ID, Settings: settings, FileOps: transcript.NewFileOps()}

	prev := -1
	for i := len(path) - 1; i >= 0; i-- {
		if path[i].Type == session.TypeCompaction {
			prev = i
			break
		}
	}
	if prev >= 0 {
		c := path[prev]
		prep.PreviousSummary = c.Get("summary").String()
		prep.RangeStart = prev + 1
		if i := indexByID(path, c.Get("firstKeptEntryId").String(), len(path)); i >= 0 {
			prep.RangeStart = i
		}
		if !c.FromExtension() {
			prep.FileOps.AddDetails(c.Get("details"))
		}
	}
	end := len(path)

	prep.TokensBefore = ContextTokens(path)
	prep.KeepRecentTokens = settings.KeepRecentTokens
	if settings.FirstKeptEntryID != "" {
		cut, err := givenCut(path, prep.RangeStart, end, settings.FirstKeptEntryID)
		if err != nil {
			return nil, err
		}
		prep.Cut = cut
	} else {
		if settings.CalibrateKeepRecent {
			prep.Calibration = Calibrate(path, prep.RangeStart, end, settings, prep.TokensBefore)
			prep.KeepRecentTokens = prep.Calibration.KeepRecentTokens
		}
		prep.Cut = findCutPoint(path, prep.RangeStart, end, prep.KeepRecentTokens, settings.CutBeforeTrailingResults)
	}
	kept := path[prep.Cut.FirstKeptIndex]
	if kept.ID == "" {
		return nil, fmt.Errorf("compaction: the first kept entry (line %d) has no id; migrate the session first", kept.Line)
	}
	prep.FirstKeptEntryID = kept.ID

	historyEnd := prep.Cut.FirstKeptIndex
	if prep.Cut.IsSplitTurn {
		historyEnd = prep.Cut.TurnStartIndex
	}
	prep.MessagesToSummarize = summaryMessages(path[prep.RangeStart:historyEnd])
	if prep.Cut.IsSplitTurn {
		prep.TurnPrefixMessages = summaryMessages(path[prep.Cut.TurnStartIndex:prep.Cut.FirstKeptIndex])
	}
	if len(prep.MessagesToSummarize) == 0 && len(prep.TurnPrefixMessages) == 0 {
		// The reference calls the model on nothing here (docs/behaviour.md §5.6).
		return nil, fmt.Errorf("%w: no messages to summarize before the kept part", ErrNothingToCompact)
	}
	for _, m := range prep.MessagesToSummarize {
		prep.FileOps.AddMessage(m)
	}
	for _, m := range prep.TurnPrefixMessages {
		prep.FileOps.AddMessage(m)
	}
	prep.ReadFiles, prep.ModifiedFiles = prep.FileOps.Lists()
	for _, e := range path[prep.Cut.FirstKeptIndex:] {
		prep.RecentMessages = session.AppendEntryMessage(prep.RecentMessages, e)
	}
	return prep, nil
}

// summaryMessages converts entries into the messages a summary covers:
// messages (tool results included), custom_message as custom, and
// branch_summary as branchSummary even when empty, as the reference does.
// Compactions and metadata give nothing.
func summaryMessages(entries []*session.Entry) []session.Message {
	msgs := make([]session.Message, 0, len(entries))
	for _, e := range entries {
		if m, ok := summaryMessage(e); ok {
			msgs = append(msgs, m)
		}
	}
	return msgs
}

// summaryMessage is the message one entry contributes to a summary.
func summaryMessage(e *session.Entry) (session.Message, bool) {
	if m, ok := e.BranchSummaryMessage(); ok {
		return m, true
	}
	return session.EntryMessage(e)
}

// summaryTokens is the estimate of summaryMessage(e), 0 when there is
// none. It is the entry's cached estimate, so calibration, the cut point
// and prepare measure each entry only once, and the message a
// custom_message or branch_summary stands for is built once, for the
// estimate, and then reused by summaryMessages. The one message
// summaryMessage gives and a context leaves out, an empty branch_summary's,
// estimates to 0 either way.
func summaryTokens(e *session.Entry) int { return e.EntryMessageTokens() }

// ContextTokens is the context size (docs/behaviour.md §3) of the context built from
// path with its last entry as the leaf (docs/behaviour.md §2). It equals
// tokens.Context over BuildContext's messages but walks only from the end
// back to the last usable usage instead of materialising every message.
func ContextTokens(path []*session.Entry) int {
	if len(path) == 0 {
		return 0
	}
	comp := -1
	for i := len(path) - 1; i >= 0; i-- {
		if path[i].Type == session.TypeCompaction {
			comp = i
			break
		}
	}
	// The context is: [summary] + path[keptFrom:comp] + path[comp+1:].
	keptFrom, keptTo := 0, 0
	if comp >= 0 {
		keptFrom, keptTo = comp, comp // empty unless the id is found
		if i := indexByID(path, path[comp].Get("firstKeptEntryId").String(), comp); i >= 0 {
			keptFrom = i
		}
	}
	trailing := 0
	visit := func(e *session.Entry) (int, bool) {
		// Only a message entry's message can be an assistant's; the
		// others' estimates are cached, their messages not built.
		if e.Role() == session.RoleAssistant {
			if u, ok := tokens.UsageTokens(e.MessageRaw()); ok {
				return u, true
			}
		}
		trailing += e.EntryMessageTokens()
		return 0, false
	}
	for i := len(path) - 1; i > comp; i-- {
		if u, ok := visit(path[i]); ok {
			return u + trailing
		}
	}
	if comp < 0 {
		return trailing
	}
	for i := keptTo - 1; i >= keptFrom; i-- {
		if u, ok := visit(path[i]); ok {
			return u + trailing
		}
	}
	c := path[comp]
	s := session.NewCompactionSummary(c.Get("summary").String(), int(c.Get("tokensBefore").Int()), c.Timestamp(), c.ID)
	return trailing + tokens.Estimate(s.Raw)
}

// indexByID finds id among path[:end], or -1. Ids are unique on a path, so
// searching from the end finds the same entry as searching from the start,
// and a compaction's first kept entry is usually close before it.
func indexByID(path []*session.Entry, id string, end int) int {
	if id == "" {
		return -1
	}
	for i := end - 1; i >= 0; i-- {
		if path[i].ID == id {
			return i
		}
	}
	return -1
}
