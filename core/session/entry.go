package session

import (
	"sync/atomic"

	"github.com/pith-dev/pith/core/tokens"
	"github.com/tidwall/gjson"
)

// Entry types of docs/behaviour.md §1. Other types are kept and written back unchanged.
const (
	TypeSession             = "session"
	TypeMessage             = "message"
	TypeThinkingLevelChange = "thinking_level_change"
	TypeModelChange         = "model_change"
	TypeCompaction          = "compaction"
	TypeBranchSummary       = "branch_summary"
	TypeCustom              = "custom"
	TypeCustomMessage       = "custom_message"
	TypeLabel               = "label"
	TypeSessionInfo         = "session_info"
)

// Entry is one line of a session file after the header. Raw holds the
// line's exact bytes (without the newline); the other fields are read from
// it. Treat an Entry as immutable: to change one, build a new line.
type Entry struct {
	Type     string
	ID       string
	ParentID string // "" for a root (parentId null or absent)
	// Line is the entry's 1-based line number in the file it was read from
	// (the header is line 1), or 0 for an entry that was never in a file.
	Line int
	Raw  []byte

	// Read from the message of a message entry while scanning the line, so
	// building a context never has to search the line again.
	role, provider, model, stopReason string
	msgStart, msgEnd                  int
	toolPaths                         []ToolPath
	toolsKnown                        bool

	// msgTokens caches MessageTokens plus one (0: not computed yet). It is
	// read and written atomically: entries are shared between goroutines
	// of the daemon, and computing it twice is harmless.
	msgTokens int64

	// built caches the message of a custom_message or branch_summary
	// (see entry_built.go), nil until it is first needed.
	built atomic.Pointer[builtMessage]
}

// ToolPath is a read, write or edit tool call with its string "path"
// argument: the file operations compaction and branch summaries list.
type ToolPath struct {
	Name string // "read", "write" or "edit"
	Path string
}

// Get reads a field of the entry by gjson path, without decoding the rest.
func (e *Entry) Get(path string) gjson.Result { return gjson.GetBytes(e.Raw, path) }

// Timestamp is the entry's ISO 8601 timestamp.
func (e *Entry) Timestamp() string { return e.Get("timestamp").String() }

// MessageRaw is the JSON of a message entry's agent message (a slice of
// Raw), or nil.
func (e *Entry) MessageRaw() []byte {
	if e.Type != TypeMessage || e.msgEnd <= e.msgStart {
		return nil
	}
	return e.Raw[e.msgStart:e.msgEnd:e.msgEnd]
}

// MessageTokens is tokens.Estimate of the entry's message (0 for an entry
// that has none), computed on first use and kept: calibration, the cut
// point and prepare all estimate the same entries, and an entry's bytes
// never change.
func (e *Entry) MessageTokens() int {
	if v := atomic.LoadInt64(&e.msgTokens); v > 0 {
		return int(v - 1)
	}
	n := 0
	if raw := e.MessageRaw(); raw != nil {
		n = tokens.Estimate(raw)
	}
	atomic.StoreInt64(&e.msgTokens, int64(n)+1)
	return n
}

// Role is the role of a message entry's agent message, or "".
func (e *Entry) Role() string {
	if e.Type != TypeMessage {
		return ""
	}
	return e.role
}

// MessageModel returns the provider and model of a message entry's message.
func (e *Entry) MessageModel() (provider, model string) { return e.provider, e.model }

// StopReason is the stopReason of a message entry's message, or "".
func (e *Entry) StopReason() string { return e.stopReason }

// FromExtension reports whether a compaction or branch summary was made
// by a plugin or an extension rather than by the summarizer: fromHook, as
// pi and Pith write it, or fromExtension, the name pi's events give the
// same fact (and which some writers store). The file lists in such an
// entry's details are the extension's own and are not carried forward.
//
// One exception: a compaction Pith's own summarizer made for another
// writer (the propose mode) carries details.generatedBy "pith". Its
// writer marks it fromHook, as every extension's (pi does), but it is
// what Pith would have written itself, and is read so.
func (e *Entry) FromExtension() bool {
	if e.Get("details."+GeneratedByKey).Str == GeneratedByPith {
		return false
	}
	return e.Get("fromHook").Bool() || e.Get("fromExtension").Bool()
}

// GeneratedByKey and GeneratedByPith mark, in a compaction's details, one
// Pith's summarizer made for another writer (see FromExtension).
const (
	GeneratedByKey  = "generatedBy"
	GeneratedByPith = "pith"
)

// Header is the first line of a session file.
type Header struct {
	ID            string
	Version       int // 1 when the header has none
	Timestamp     string
	Cwd           string
	ParentSession string
	Raw           []byte
}

var knownTypes = map[string]string{}

func init() {
	for _, t := range []string{TypeSession, TypeMessage, TypeThinkingLevelChange, TypeModelChange,
		TypeCompaction, TypeBranchSummary, TypeCustom, TypeCustomMessage, TypeLabel, TypeSessionInfo} {
		knownTypes[t] = t
	}
	for _, r := range []string{RoleUser, RoleAssistant, RoleToolResult, RoleBashExecution, RoleCustom,
		RoleCompactionSummary, RoleBranchSummary, "hookMessage"} {
		knownRoles[r] = r
	}
}

var knownRoles = map[string]string{}

// intern returns a shared copy of the well-known type names, so a session
// of 100 000 entries does not hold 100 000 copies of "message".
func intern(s string) string {
	if k, ok := knownTypes[s]; ok {
		return k
	}
	return s
}

func internRole(s string) string {
	if k, ok := knownRoles[s]; ok {
		return k
	}
	return s
}
