package hooks

import (
	"encoding/json"
)

// EventID names a hook event. The values are stable: they cross the wire in
// Describe and appear in configuration and logs.
type EventID string

// The five hook events (docs/behaviour.md §13).
const (
	EventBeforeCompact EventID = "session_before_compact"
	EventCompacting    EventID = "session.compacting"
	EventCompact       EventID = "session_compact"
	EventBeforeTree    EventID = "session_before_tree"
	EventTree          EventID = "session_tree"
)

// AllEvents lists every event in a fixed order.
func AllEvents() []EventID {
	return []EventID{EventBeforeCompact, EventCompacting, EventCompact, EventBeforeTree, EventTree}
}

// Valid reports whether e is one of the five known events.
func (e EventID) Valid() bool {
	switch e {
	case EventBeforeCompact, EventCompacting, EventCompact, EventBeforeTree, EventTree:
		return true
	}
	return false
}

// Reason says why a compaction runs (docs/behaviour.md §9).
type Reason string

// Compaction reasons.
const (
	ReasonManual    Reason = "manual"
	ReasonThreshold Reason = "threshold"
	ReasonOverflow  Reason = "overflow"
)

// Preparation is the material of docs/behaviour.md §5 that a plugin needs to decide about
// or produce a compaction. Messages are the engine's JSON encoding of each
// LLM message, unchanged.
//
// Past the plugin's messagesBytes only the newest messages that fit are
// sent (turn-prefix messages first, then the newest messages to
// summarize) and MessagesTruncated is set; MessagesTotal and
// TurnPrefixTotal say how many there are. They are the messages of the
// path entries from index RangeStart (an Offset for a PathOnly
// ReadEntries from the event's LeafID) up to FirstKeptEntryID, which a
// plugin pages through the host API.
type Preparation struct {
	// FirstKeptEntryID is the first entry kept verbatim after the compaction.
	FirstKeptEntryID string `json:"firstKeptEntryId"`
	// IsSplitTurn is set when the cut falls inside a turn (TurnPrefixMessages is then non-empty).
	IsSplitTurn bool `json:"isSplitTurn"`
	// TokensBefore is the estimated context size before compacting.
	TokensBefore int `json:"tokensBefore"`
	// MessagesToSummarize are the messages the summary replaces, as raw JSON.
	MessagesToSummarize []json.RawMessage `json:"messagesToSummarize"`
	// TurnPrefixMessages are the start of a split turn, summarized separately.
	TurnPrefixMessages []json.RawMessage `json:"turnPrefixMessages"`
	// PreviousSummary is the summary of the last compaction, if any, to be updated.
	PreviousSummary string `json:"previousSummary,omitempty"`
	// ReadFiles are the files read in the compacted range and earlier summaries.
	ReadFiles []string `json:"readFiles"`
	// ModifiedFiles are the files written or edited in the same range.
	ModifiedFiles []string `json:"modifiedFiles"`
	// KeepRecentTokens is the configured budget of recent context kept verbatim.
	KeepRecentTokens int `json:"keepRecentTokens"`
	// ReserveTokens is the configured headroom kept free for the model's answer.
	ReserveTokens int `json:"reserveTokens"`
	// RangeStart is the path index where the summarized range starts: an
	// Offset for a PathOnly ReadEntries from the event's LeafID.
	RangeStart int `json:"rangeStart"`
	// MessagesTruncated is set when only the newest messages that fit were sent.
	MessagesTruncated bool `json:"messagesTruncated,omitempty"`
	// MessagesTotal is how many messages there are to summarize in all.
	MessagesTotal int `json:"messagesTotal,omitempty"`
	// TurnPrefixTotal is how many turn-prefix messages there are in all.
	TurnPrefixTotal int `json:"turnPrefixTotal,omitempty"`
}

// Label is a label in force on the current path (pi's `label` entries, a
// later one for the same target replacing it and an empty one clearing
// it), so a guard plugin can, for example, refuse to compact a session
// labelled "no-compact".
type Label struct {
	// EntryID is the labelled entry.
	EntryID string `json:"entryId"`
	// Label is the label's text.
	Label string `json:"label"`
}

// BeforeCompactEvent is the payload of session_before_compact.
//
// PathEntries are the raw entries of the path root → LeafID, except those
// whose message already travels in Preparation (messagesToSummarize,
// turnPrefixMessages): no entry is sent twice. Past the plugin's
// pathEntriesBytes only the entries from the last compaction on are sent,
// or, when even those do not fit, the newest that do; PathTruncated is
// then set, and the plugin pages the whole path (PathLength entries)
// through the host API (ReadEntries with PathOnly, LeafID, Offset, Limit;
// sdk.ReadPath does it). Labels share that budget, newest first: a cut
// list of labels sets PathTruncated too.
type BeforeCompactEvent struct {
	// SessionID identifies the session being compacted.
	SessionID string `json:"sessionId"`
	// Preparation is what the compaction would summarize and keep.
	Preparation Preparation `json:"preparation"`
	// PathEntries are the raw entries of the path not already in Preparation.
	PathEntries []json.RawMessage `json:"pathEntries"`
	// CustomInstructions are the user's instructions for this compaction, if any.
	CustomInstructions string `json:"customInstructions,omitempty"`
	// Reason says why the compaction runs: manual, threshold or overflow.
	Reason Reason `json:"reason"`
	// WillRetry is set when the agent retries its turn after an overflow compaction.
	WillRetry bool `json:"willRetry"`
	// Labels are the labels on entries of the current path.
	Labels []Label `json:"labels,omitempty"`
	// LeafID is the current leaf: the end of the path.
	LeafID string `json:"leafId,omitempty"`
	// PathLength is the number of entries on the whole path root → LeafID.
	PathLength int `json:"pathLength,omitempty"`
	// PathTruncated is set when PathEntries holds only part of the path.
	PathTruncated bool `json:"pathTruncated,omitempty"`
	// LabelsTruncated is set when Labels holds only the newest labels
	// that fit (PathTruncated is then set too): only then must a plugin
	// that decides by labels page the path.
	LabelsTruncated bool `json:"labelsTruncated,omitempty"`
	// PathSinceCompaction is the index in PathEntries of the last
	// compaction entry (0 when there is none): where the entries "after
	// the last compaction" start when the path must be cut. Host-side
	// only; it does not cross the wire.
	PathSinceCompaction int `json:"-"`
}

// Compaction is a complete compaction supplied by a plugin in place of the
// built-in summarizer.
type Compaction struct {
	// Summary replaces the compacted messages; required, under the host's cap.
	Summary string `json:"summary"`
	// ShortSummary is an optional one-line form of the summary.
	ShortSummary string `json:"shortSummary,omitempty"`
	// FirstKeptEntryID is the first entry kept; it must lie in the compacted range on the path.
	FirstKeptEntryID string `json:"firstKeptEntryId"`
	// TokensBefore is the context size before compacting; 0 means the host's estimate.
	TokensBefore int `json:"tokensBefore"`
	// Details is optional JSON stored in the compaction entry's details.
	Details json.RawMessage `json:"details,omitempty"`
	// PreserveData is optional JSON stored in the entry under the plugin's name.
	PreserveData json.RawMessage `json:"preserveData,omitempty"`
}

// BeforeCompactResult is what a plugin answers to session_before_compact: a
// cancel, a compaction, or neither (a nil result means the same as neither).
// Setting both is an error of the plugin: the cancel wins.
type BeforeCompactResult struct {
	// Cancel stops the compaction.
	Cancel bool `json:"cancel,omitempty"`
	// CancelReason is shown to the user and logged when Cancel is set.
	CancelReason string `json:"cancelReason,omitempty"`
	// Compaction, when set, is saved in place of the built-in summary.
	Compaction *Compaction `json:"compaction,omitempty"`
}

// CompactingEvent is the payload of session.compacting, sent only when no
// plugin supplied a compaction.
type CompactingEvent struct {
	// SessionID identifies the session being compacted.
	SessionID string `json:"sessionId"`
	// Messages are the messages to summarize, as raw JSON.
	Messages []json.RawMessage `json:"messages"`
	// TurnPrefixMessages are the start of a split turn, summarized separately.
	TurnPrefixMessages []json.RawMessage `json:"turnPrefixMessages"`
	// Reason says why the compaction runs: manual, threshold or overflow.
	Reason Reason `json:"reason"`
	// FirstKeptEntryID is the first entry kept verbatim after the compaction.
	FirstKeptEntryID string `json:"firstKeptEntryId"`
	// IsSplitTurn is set when the cut falls inside a turn.
	IsSplitTurn bool `json:"isSplitTurn"`
	// TokensBefore is the estimated context size before compacting.
	TokensBefore int `json:"tokensBefore"`
	// ReadFiles are the files read in the compacted range and earlier summaries.
	ReadFiles []string `json:"readFiles"`
	// ModifiedFiles are the files written or edited in the same range.
	ModifiedFiles []string `json:"modifiedFiles"`
	// Workspace is the session's workspace — the directory its header's
	// cwd names — by its real path (links resolved), when the host reads
	// files from it (a pith serve daemon only under its
	// server.workspaceRoot, a local pith compact only under the current
	// directory, --workspace or workspace.roots), or "". A plugin that
	// reads project files takes them from here, never from the header's
	// cwd, which a daemon's client chooses, and checks that what it opens
	// has this real path (workspace.RealPath): a link swapped in meanwhile
	// leads elsewhere.
	Workspace string `json:"workspace,omitempty"`
}

// CompactingResult adds material to the built-in summarization.
type CompactingResult struct {
	// Context lines are appended to the summarizer's input.
	Context []string `json:"context,omitempty"`
	// Prompt replaces the summarization prompt when non-empty.
	Prompt string `json:"prompt,omitempty"`
	// PreserveData is stored in the compaction entry under the plugin's name.
	PreserveData json.RawMessage `json:"preserveData,omitempty"`
	// Messages are put into the context after the compaction verbatim, as
	// custom_message entries following the compaction entry: what must
	// survive word for word, not only steer the summary. They count
	// against the same byte limit as the context lines.
	Messages []InjectedMessage `json:"messages,omitempty"`
}

// MaxInjectedMessages bounds how many messages one plugin may put after a
// compaction.
const MaxInjectedMessages = 8

// InjectedMessage is one message a plugin puts after a compaction. Its
// entry's customType is the plugin's name, or "<name>/<type>" with Type:
// plugins cannot write under each other's names.
type InjectedMessage struct {
	Type    string `json:"type,omitempty"`
	Content string `json:"content"`
	// Display shows it to the user in pi's interface.
	Display bool `json:"display,omitempty"`
}

// CompactEvent is the notification session_compact, sent after the compaction
// entry was saved.
type CompactEvent struct {
	// SessionID identifies the compacted session.
	SessionID string `json:"sessionId"`
	// CompactionEntry is the saved compaction entry, as raw JSON.
	CompactionEntry json.RawMessage `json:"compactionEntry"`
	// FromExtension is set when a plugin supplied the compaction.
	FromExtension bool `json:"fromExtension"`
}

// BeforeTreeEvent is the payload of session_before_tree (docs/behaviour.md §11).
type BeforeTreeEvent struct {
	// SessionID identifies the session.
	SessionID string `json:"sessionId"`
	// TargetID is the entry the user navigates to.
	TargetID string `json:"targetId"`
	// OldLeafID is the leaf being left, if any.
	OldLeafID string `json:"oldLeafId,omitempty"`
	// CommonAncestorID is the deepest entry shared by the old and new paths, if any.
	CommonAncestorID string `json:"commonAncestorId,omitempty"`
	// EntriesToSummarize are the raw entries of the abandoned branch, oldest first.
	EntriesToSummarize []json.RawMessage `json:"entriesToSummarize"`
	// UserWantsSummary is set when the user asked for a branch summary.
	UserWantsSummary bool `json:"userWantsSummary"`
	// CustomInstructions are the user's instructions for the summary, if any.
	CustomInstructions string `json:"customInstructions,omitempty"`
	// Label is the label the user gave the new branch summary, if any.
	Label string `json:"label,omitempty"`
	// EntriesTruncated is set when EntriesToSummarize holds only the
	// newest entries that fit the plugin's pathEntriesBytes;
	// EntriesTotal is how many there are. The plugin reads the rest
	// through the host API (the path from OldLeafID).
	EntriesTruncated bool `json:"entriesTruncated,omitempty"`
	EntriesTotal     int  `json:"entriesTotal,omitempty"`
}

// BranchSummary is a branch summary supplied by a plugin.
type BranchSummary struct {
	// Summary is the summary text; required, under the host's cap.
	Summary string `json:"summary"`
	// Details is optional JSON stored in the branch summary entry.
	Details json.RawMessage `json:"details,omitempty"`
}

// BeforeTreeResult is what a plugin answers to session_before_tree.
type BeforeTreeResult struct {
	// Cancel stops the navigation.
	Cancel bool `json:"cancel,omitempty"`
	// CancelReason is shown to the user and logged when Cancel is set.
	CancelReason string `json:"cancelReason,omitempty"`
	// Summary, when set, is saved in place of the built-in branch summary.
	Summary *BranchSummary `json:"summary,omitempty"`
	// CustomInstructions, when non-empty, is added to the summarization
	// instructions, or replaces them when ReplaceInstructions is set.
	CustomInstructions  string `json:"customInstructions,omitempty"`
	ReplaceInstructions bool   `json:"replaceInstructions,omitempty"`
	// Label, when non-empty, labels the new branch summary entry.
	Label string `json:"label,omitempty"`
}

// TreeEvent is the notification session_tree, sent after navigation.
type TreeEvent struct {
	// SessionID identifies the session.
	SessionID string `json:"sessionId"`
	// NewLeafID is the leaf after navigation.
	NewLeafID string `json:"newLeafId"`
	// OldLeafID is the leaf before navigation, if any.
	OldLeafID string `json:"oldLeafId,omitempty"`
	// SummaryEntry is the branch summary entry saved, as raw JSON, if any.
	SummaryEntry json.RawMessage `json:"summaryEntry,omitempty"`
	// FromExtension is set when a plugin supplied the summary.
	FromExtension bool `json:"fromExtension"`
}
