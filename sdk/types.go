package sdk

import "github.com/pith-dev/pith/hooks"

// The hook types, re-exported so that a plugin imports only sdk.
type (
	EventID = hooks.EventID
	Reason  = hooks.Reason
	Label   = hooks.Label

	Preparation         = hooks.Preparation
	BeforeCompactEvent  = hooks.BeforeCompactEvent
	BeforeCompactResult = hooks.BeforeCompactResult
	Compaction          = hooks.Compaction
	CompactingEvent     = hooks.CompactingEvent
	CompactingResult    = hooks.CompactingResult
	InjectedMessage     = hooks.InjectedMessage
	CompactEvent        = hooks.CompactEvent
	BeforeTreeEvent     = hooks.BeforeTreeEvent
	BeforeTreeResult    = hooks.BeforeTreeResult
	BranchSummary       = hooks.BranchSummary
	TreeEvent           = hooks.TreeEvent

	BeforeCompactHandler = hooks.BeforeCompactHandler
	CompactingHandler    = hooks.CompactingHandler
	CompactHandler       = hooks.CompactHandler
	BeforeTreeHandler    = hooks.BeforeTreeHandler
	TreeHandler          = hooks.TreeHandler

	BeforeCompactFunc = hooks.BeforeCompactFunc
	CompactingFunc    = hooks.CompactingFunc
	CompactFunc       = hooks.CompactFunc
	BeforeTreeFunc    = hooks.BeforeTreeFunc
	TreeFunc          = hooks.TreeFunc
	Funcs             = hooks.Funcs

	HostAPI            = hooks.HostAPI
	ReadEntriesRequest = hooks.ReadEntriesRequest
	CompleteRequest    = hooks.CompleteRequest
	CompleteResponse   = hooks.CompleteResponse
)

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
