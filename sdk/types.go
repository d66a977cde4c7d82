package sdk

import "github.com/pith-dev/pith/hooks"

// The hook types are re-exported so that a plugin imports only sdk. They are
// aliases, so a value crosses between sdk, sdktest and hooks unchanged; each
// alias's comment lists the fields, because go doc does not follow an alias
// (a test keeps these lists complete). Raw JSON fields are json.RawMessage.

// EventID names a hook event: session_before_compact, session.compacting,
// session_compact, session_before_tree or session_tree.
type EventID = hooks.EventID

// Reason says why a compaction runs: ReasonManual, ReasonThreshold or
// ReasonOverflow.
type Reason = hooks.Reason

// Label is a label on an entry of the current path. Fields:
//
//   - EntryID string: the labelled entry.
//   - Label string: the label's text.
type Label = hooks.Label

// Preparation is what a compaction would summarize and keep. Fields:
//
//   - FirstKeptEntryID string: the first entry kept verbatim after the compaction.
//   - IsSplitTurn bool: the cut falls inside a turn (TurnPrefixMessages is then non-empty).
//   - TokensBefore int: the estimated context size before compacting.
//   - MessagesToSummarize []json.RawMessage: the messages the summary replaces.
//   - TurnPrefixMessages []json.RawMessage: the start of a split turn, summarized separately.
//   - PreviousSummary string: the last compaction's summary, if any, to be updated.
//   - ReadFiles []string: files read in the compacted range and earlier summaries.
//   - ModifiedFiles []string: files written or edited in the same range.
//   - KeepRecentTokens int: the configured budget of recent context kept verbatim.
//   - ReserveTokens int: the configured headroom kept free for the model's answer.
//   - RangeStart int: the path index where the summarized range starts (an Offset for ReadEntries/ReadPath).
//   - MessagesTruncated bool: only the newest messages that fit were sent; page the rest from RangeStart.
//   - MessagesTotal int: how many messages there are to summarize in all.
//   - TurnPrefixTotal int: how many turn-prefix messages there are in all.
type Preparation = hooks.Preparation

// BeforeCompactEvent is the payload of session_before_compact, sent before
// every compaction. Fields:
//
//   - SessionID string: the session being compacted.
//   - Preparation Preparation: what the compaction would summarize and keep.
//   - PathEntries []json.RawMessage: the path's raw entries not already in Preparation.
//   - CustomInstructions string: the user's instructions for this compaction, if any.
//   - Reason Reason: why the compaction runs (manual, threshold, overflow).
//   - WillRetry bool: the agent retries its turn after this (overflow) compaction.
//   - Labels []Label: the labels on entries of the current path.
//   - LeafID string: the current leaf, the end of the path.
//   - PathLength int: the number of entries on the whole path root → LeafID.
//   - PathTruncated bool: PathEntries holds only part of the path; page the rest with ReadPath.
//   - LabelsTruncated bool: Labels holds only the newest labels that fit; a guard deciding by labels pages the path.
//   - PathSinceCompaction int: host-side only, never sent to a plugin.
type BeforeCompactEvent = hooks.BeforeCompactEvent

// BeforeCompactResult answers session_before_compact; nil means no
// opinion. Fields:
//
//   - Cancel bool: stop the compaction.
//   - CancelReason string: shown to the user and logged when Cancel is set.
//   - Compaction *Compaction: when set, saved in place of the built-in summary.
type BeforeCompactResult = hooks.BeforeCompactResult

// Compaction is a whole compaction supplied by a plugin. Fields:
//
//   - Summary string: replaces the compacted messages; required, under the host's cap.
//   - ShortSummary string: an optional one-line form of the summary.
//   - FirstKeptEntryID string: the first entry kept; must lie in the compacted range on the path.
//   - TokensBefore int: the context size before compacting; 0 means the host's estimate.
//   - Details json.RawMessage: optional JSON stored in the entry's details.
//   - PreserveData json.RawMessage: optional JSON stored in the entry under the plugin's name.
type Compaction = hooks.Compaction

// CompactingEvent is the payload of session.compacting, sent when the
// built-in summarizer is about to run. Fields:
//
//   - SessionID string: the session being compacted.
//   - Messages []json.RawMessage: the messages to summarize.
//   - TurnPrefixMessages []json.RawMessage: the start of a split turn, summarized separately.
//   - Reason Reason: why the compaction runs (manual, threshold, overflow).
//   - FirstKeptEntryID string: the first entry kept verbatim after the compaction.
//   - IsSplitTurn bool: the cut falls inside a turn.
//   - TokensBefore int: the estimated context size before compacting.
//   - ReadFiles []string: files read in the compacted range and earlier summaries.
//   - ModifiedFiles []string: files written or edited in the same range.
//   - Workspace string: the session's workspace, by its real path, when
//     the host reads files there (a pith serve daemon only under its
//     server.workspaceRoot), or "". Read project files from here, never
//     from the header's cwd, which a daemon's client chooses; check that
//     the directory opened has this real path (a link swapped in since
//     leads elsewhere).
type CompactingEvent = hooks.CompactingEvent

// CompactingResult adds material to the built-in summarization; nil means
// no opinion. Fields:
//
//   - Context []string: lines appended to the summarizer's input.
//   - Prompt string: replaces the summarization prompt when non-empty.
//   - PreserveData json.RawMessage: stored in the compaction entry under the plugin's name.
//   - Messages []InjectedMessage: put verbatim after the compaction as custom_message entries (at most 8).
type CompactingResult = hooks.CompactingResult

// InjectedMessage is one message a plugin puts into the context after a
// compaction; its entry's customType is the plugin's name, or
// "<name>/<Type>". Fields:
//
//   - Type string: an optional suffix of the entry's customType.
//   - Content string: the message text, kept word for word.
//   - Display bool: show it to the user in pi's interface.
type InjectedMessage = hooks.InjectedMessage

// CompactEvent is the notification session_compact, sent after the
// compaction entry was saved. Fields:
//
//   - SessionID string: the compacted session.
//   - CompactionEntry json.RawMessage: the saved compaction entry.
//   - FromExtension bool: a plugin supplied the compaction.
type CompactEvent = hooks.CompactEvent

// BeforeTreeEvent is the payload of session_before_tree, sent before a
// navigation in the session tree. Fields:
//
//   - SessionID string: the session.
//   - TargetID string: the entry the user navigates to.
//   - OldLeafID string: the leaf being left, if any.
//   - CommonAncestorID string: the deepest entry shared by the old and new paths, if any.
//   - EntriesToSummarize []json.RawMessage: the abandoned branch's raw entries, oldest first.
//   - UserWantsSummary bool: the user asked for a branch summary.
//   - CustomInstructions string: the user's instructions for the summary, if any.
//   - Label string: the label the user gave the new summary, if any.
//   - EntriesTruncated bool: EntriesToSummarize holds only the newest entries that fit.
//   - EntriesTotal int: how many entries there are in all when truncated.
type BeforeTreeEvent = hooks.BeforeTreeEvent

// BeforeTreeResult answers session_before_tree; nil means no opinion.
// Fields:
//
//   - Cancel bool: stop the navigation.
//   - CancelReason string: shown to the user and logged when Cancel is set.
//   - Summary *BranchSummary: when set, saved in place of the built-in branch summary.
//   - CustomInstructions string: added to the summarization instructions.
//   - ReplaceInstructions bool: CustomInstructions replace the instructions instead.
//   - Label string: labels the new branch summary entry.
type BeforeTreeResult = hooks.BeforeTreeResult

// BranchSummary is a branch summary supplied by a plugin. Fields:
//
//   - Summary string: the summary text; required, under the host's cap.
//   - Details json.RawMessage: optional JSON stored in the branch summary entry.
type BranchSummary = hooks.BranchSummary

// TreeEvent is the notification session_tree, sent after a navigation.
// Fields:
//
//   - SessionID string: the session.
//   - NewLeafID string: the leaf after navigation.
//   - OldLeafID string: the leaf before navigation, if any.
//   - SummaryEntry json.RawMessage: the branch summary entry saved, if any.
//   - FromExtension bool: a plugin supplied the summary.
type TreeEvent = hooks.TreeEvent

// The handler interfaces: implement one per event the plugin handles.
type (
	// BeforeCompactHandler: BeforeCompact(ctx, *BeforeCompactEvent) (*BeforeCompactResult, error).
	BeforeCompactHandler = hooks.BeforeCompactHandler
	// CompactingHandler: Compacting(ctx, *CompactingEvent) (*CompactingResult, error).
	CompactingHandler = hooks.CompactingHandler
	// CompactHandler: Compact(ctx, *CompactEvent) error.
	CompactHandler = hooks.CompactHandler
	// BeforeTreeHandler: BeforeTree(ctx, *BeforeTreeEvent) (*BeforeTreeResult, error).
	BeforeTreeHandler = hooks.BeforeTreeHandler
	// TreeHandler: Tree(ctx, *TreeEvent) error.
	TreeHandler = hooks.TreeHandler
)

// Function adapters for the handler interfaces.
type (
	BeforeCompactFunc = hooks.BeforeCompactFunc
	CompactingFunc    = hooks.CompactingFunc
	CompactFunc       = hooks.CompactFunc
	BeforeTreeFunc    = hooks.BeforeTreeFunc
	TreeFunc          = hooks.TreeFunc
)

// Funcs bundles optional handler functions; the events whose field is set
// are the ones the plugin handles. Fields:
//
//   - OnBeforeCompact BeforeCompactFunc: handles session_before_compact.
//   - OnCompacting CompactingFunc: handles session.compacting.
//   - OnCompact CompactFunc: handles session_compact.
//   - OnBeforeTree BeforeTreeFunc: handles session_before_tree.
//   - OnTree TreeFunc: handles session_tree.
type Funcs = hooks.Funcs

// HostAPI is the host's API, available inside a handler through Host(ctx):
// ReadEntries, EstimateTokens, Complete and Log.
type HostAPI = hooks.HostAPI

// ReadEntriesRequest selects the entries HostAPI.ReadEntries returns.
// Fields:
//
//   - SessionID string: the session to read; only the event's own session is allowed.
//   - LeafID string: the leaf the path is taken from (with PathOnly); default the current leaf.
//   - PathOnly bool: only the path root → leaf, else every entry in file order.
//   - Offset int: skip that many entries of the answer.
//   - Limit int: when positive, at most that many entries (a page); an empty page is the end.
type ReadEntriesRequest = hooks.ReadEntriesRequest

// CompleteRequest is one completion on the host's summarizer. Fields:
//
//   - SystemPrompt string: the system prompt; may be empty.
//   - Prompt string: the user prompt.
//   - MaxTokens int: caps the answer; the host caps it further at limits.completeMaxTokens.
type CompleteRequest = hooks.CompleteRequest

// CompleteResponse is the host summarizer's answer. Fields:
//
//   - Text string: the answer.
//   - FinishReason string: "stop" for a complete answer, "length" when cut off.
//   - Model string: the model that answered.
type CompleteResponse = hooks.CompleteResponse

// Event ids and reasons.
const (
	EventBeforeCompact = hooks.EventBeforeCompact
	EventCompacting    = hooks.EventCompacting
	EventCompact       = hooks.EventCompact
	EventBeforeTree    = hooks.EventBeforeTree
	EventTree          = hooks.EventTree

	ReasonManual    = hooks.ReasonManual
	ReasonThreshold = hooks.ReasonThreshold
	ReasonOverflow  = hooks.ReasonOverflow
)

// Closer may be implemented by a plugin to release resources when the host
// shuts it down.
type Closer interface {
	Close() error
}
