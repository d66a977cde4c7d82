package sdk

import "github.com/pith-dev/pith/hooks"

// The hook types are re-exported so that a plugin imports only sdk. They are
// aliases, so a value crosses between sdk, sdktest and hooks unchanged; each
// alias's comment lists the fields, because go doc does not follow an alias.
// The event and result types' aliases are generated with them from the
// proto into types_gen.go; a test keeps the lists below complete.

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

// Closer may be implemented by a plugin to release resources when the host
// shuts it down.
type Closer interface {
	Close() error
}
