package hooks

import (
	"encoding/json"
)

// EventID names a hook event. The values are stable: they cross the wire in
// Describe and appear in configuration and logs.
type EventID string

// The five events of SPEC §13.
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

// Reason says why a compaction runs (SPEC §9).
type Reason string

// Compaction reasons.
const (
	ReasonManual    Reason = "manual"
	ReasonThreshold Reason = "threshold"
	ReasonOverflow  Reason = "overflow"
)

// Preparation is the material of SPEC §5 that a plugin needs to decide about
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
	FirstKeptEntryID    string            `json:"firstKeptEntryId"`
	IsSplitTurn         bool              `json:"isSplitTurn"`
	TokensBefore        int               `json:"tokensBefore"`
	MessagesToSummarize []json.RawMessage `json:"messagesToSummarize"`
	TurnPrefixMessages  []json.RawMessage `json:"turnPrefixMessages"`
	PreviousSummary     string            `json:"previousSummary,omitempty"`
	ReadFiles           []string          `json:"readFiles"`
	ModifiedFiles       []string          `json:"modifiedFiles"`
	KeepRecentTokens    int               `json:"keepRecentTokens"`
	ReserveTokens       int               `json:"reserveTokens"`
	RangeStart          int               `json:"rangeStart"`
	MessagesTruncated   bool              `json:"messagesTruncated,omitempty"`
	MessagesTotal       int               `json:"messagesTotal,omitempty"`
	TurnPrefixTotal     int               `json:"turnPrefixTotal,omitempty"`
}

// Label is a label in force on the current path (pi's `label` entries, a
// later one for the same target replacing it and an empty one clearing
// it), so a guard plugin can, for example, refuse to compact a session
// labelled "no-compact".
type Label struct {
	EntryID string `json:"entryId"`
	Label   string `json:"label"`
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
	SessionID          string            `json:"sessionId"`
	Preparation        Preparation       `json:"preparation"`
	PathEntries        []json.RawMessage `json:"pathEntries"`
	CustomInstructions string            `json:"customInstructions,omitempty"`
	Reason             Reason            `json:"reason"`
	WillRetry          bool              `json:"willRetry"`
	Labels             []Label           `json:"labels,omitempty"`
	LeafID             string            `json:"leafId,omitempty"`
	PathLength         int               `json:"pathLength,omitempty"`
	PathTruncated      bool              `json:"pathTruncated,omitempty"`
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
	Summary          string          `json:"summary"`
	ShortSummary     string          `json:"shortSummary,omitempty"`
	FirstKeptEntryID string          `json:"firstKeptEntryId"`
	TokensBefore     int             `json:"tokensBefore"`
	Details          json.RawMessage `json:"details,omitempty"`
	PreserveData     json.RawMessage `json:"preserveData,omitempty"`
}

// BeforeCompactResult is what a plugin answers to session_before_compact: a
// cancel, a compaction, or neither (a nil result means the same as neither).
// Setting both is an error of the plugin: the cancel wins.
type BeforeCompactResult struct {
	Cancel       bool        `json:"cancel,omitempty"`
	CancelReason string      `json:"cancelReason,omitempty"`
	Compaction   *Compaction `json:"compaction,omitempty"`
}

// CompactingEvent is the payload of session.compacting, sent only when no
// plugin supplied a compaction.
type CompactingEvent struct {
	SessionID          string            `json:"sessionId"`
	Messages           []json.RawMessage `json:"messages"`
	TurnPrefixMessages []json.RawMessage `json:"turnPrefixMessages"`
	Reason             Reason            `json:"reason"`
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
	SessionID       string          `json:"sessionId"`
	CompactionEntry json.RawMessage `json:"compactionEntry"`
	FromExtension   bool            `json:"fromExtension"`
}

// BeforeTreeEvent is the payload of session_before_tree (SPEC §11).
type BeforeTreeEvent struct {
	SessionID          string            `json:"sessionId"`
	TargetID           string            `json:"targetId"`
	OldLeafID          string            `json:"oldLeafId,omitempty"`
	CommonAncestorID   string            `json:"commonAncestorId,omitempty"`
	EntriesToSummarize []json.RawMessage `json:"entriesToSummarize"`
	UserWantsSummary   bool              `json:"userWantsSummary"`
	CustomInstructions string            `json:"customInstructions,omitempty"`
	Label              string            `json:"label,omitempty"`
	// EntriesTruncated is set when EntriesToSummarize holds only the
	// newest entries that fit the plugin's pathEntriesBytes;
	// EntriesTotal is how many there are. The plugin reads the rest
	// through the host API (the path from OldLeafID).
	EntriesTruncated bool `json:"entriesTruncated,omitempty"`
	EntriesTotal     int  `json:"entriesTotal,omitempty"`
}

// BranchSummary is a branch summary supplied by a plugin.
type BranchSummary struct {
	Summary string          `json:"summary"`
	Details json.RawMessage `json:"details,omitempty"`
}

// BeforeTreeResult is what a plugin answers to session_before_tree.
type BeforeTreeResult struct {
	Cancel       bool           `json:"cancel,omitempty"`
	CancelReason string         `json:"cancelReason,omitempty"`
	Summary      *BranchSummary `json:"summary,omitempty"`
	// CustomInstructions, when non-empty, is added to the summarization
	// instructions, or replaces them when ReplaceInstructions is set.
	CustomInstructions  string `json:"customInstructions,omitempty"`
	ReplaceInstructions bool   `json:"replaceInstructions,omitempty"`
	// Label, when non-empty, labels the new branch summary entry.
	Label string `json:"label,omitempty"`
}

// TreeEvent is the notification session_tree, sent after navigation.
type TreeEvent struct {
	SessionID     string          `json:"sessionId"`
	NewLeafID     string          `json:"newLeafId"`
	OldLeafID     string          `json:"oldLeafId,omitempty"`
	SummaryEntry  json.RawMessage `json:"summaryEntry,omitempty"`
	FromExtension bool            `json:"fromExtension"`
}
