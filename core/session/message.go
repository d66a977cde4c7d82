package session

import (
	"encoding/json"
	"strconv"
)

// Message roles of docs/behaviour.md §1. compactionSummary and branchSummary exist only in
// memory, built from compaction and branch_summary entries.
const (
	RoleUser              = "user"
	RoleAssistant         = "assistant"
	RoleToolResult        = "toolResult"
	RoleBashExecution     = "bashExecution"
	RoleCustom            = "custom"
	RoleCompactionSummary = "compactionSummary"
	RoleBranchSummary     = "branchSummary"
)

// Message is an agent message in a context: its role, its JSON (the original
// bytes for a message entry, built JSON for the synthetic roles) and the
// entry it came from. Decode it with Decode when the fields are needed.
type Message struct {
	Role    string
	Raw     json.RawMessage
	EntryID string
	// ToolPaths are the message's read/write/edit tool calls with a path,
	// when ToolPathsKnown (a message read from a session line); otherwise
	// callers find them in Raw.
	ToolPaths      []ToolPath
	ToolPathsKnown bool
}

// Decode fully decodes the message.
func (m Message) Decode() (*AgentMessage, error) {
	var am AgentMessage
	if err := json.Unmarshal(m.Raw, &am); err != nil {
		return nil, err
	}
	return &am, nil
}

// AgentMessage is the decoded form of every role; fields that a role does
// not use stay zero. Content holds a string or blocks (see ContentBlocks).
type AgentMessage struct {
	Role         string          `json:"role"`
	Content      json.RawMessage `json:"content,omitempty"`
	Timestamp    json.RawMessage `json:"timestamp,omitempty"` // a number (ms) or an ISO string
	Provider     string          `json:"provider,omitempty"`
	Model        string          `json:"model,omitempty"`
	API          string          `json:"api,omitempty"`
	Usage        *Usage          `json:"usage,omitempty"`
	StopReason   string          `json:"stopReason,omitempty"`
	ErrorMessage string          `json:"errorMessage,omitempty"`
	ToolCallID   string          `json:"toolCallId,omitempty"`
	ToolName     string          `json:"toolName,omitempty"`
	IsError      bool            `json:"isError,omitempty"`
	Details      json.RawMessage `json:"details,omitempty"`
	Command      string          `json:"command,omitempty"`
	Output       string          `json:"output,omitempty"`
	ExitCode     *int            `json:"exitCode,omitempty"`
	Cancelled    bool            `json:"cancelled,omitempty"`
	Truncated    bool            `json:"truncated,omitempty"`
	CustomType   string          `json:"customType,omitempty"`
	Display      *bool           `json:"display,omitempty"`
	Summary      string          `json:"summary,omitempty"`
	TokensBefore int             `json:"tokensBefore,omitempty"`
	FromID       string          `json:"fromId,omitempty"`
}

// Usage is an assistant message's token usage.
type Usage struct {
	Input       int `json:"input"`
	Output      int `json:"output"`
	CacheRead   int `json:"cacheRead"`
	CacheWrite  int `json:"cacheWrite"`
	TotalTokens int `json:"totalTokens"`
}

// ContentBlock is one block of a message's content.
type ContentBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	Thinking  string          `json:"thinking,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Data      string          `json:"data,omitempty"`
	MimeType  string          `json:"mimeType,omitempty"`
}

// ContentText returns the content when it is a plain string.
func (m *AgentMessage) ContentText() (string, bool) {
	var s string
	if len(m.Content) > 0 && m.Content[0] == '"' && json.Unmarshal(m.Content, &s) == nil {
		return s, true
	}
	return "", false
}

// ContentBlocks returns the content as blocks; a string content becomes one
// text block.
func (m *AgentMessage) ContentBlocks() []ContentBlock {
	if s, ok := m.ContentText(); ok {
		return []ContentBlock{{Type: "text", Text: s}}
	}
	var blocks []ContentBlock
	_ = json.Unmarshal(m.Content, &blocks)
	return blocks
}

// NewCompactionSummary builds the in-memory message for a compaction entry.
func NewCompactionSummary(summary string, tokensBefore int, timestamp string, entryID string) Message {
	raw := []byte(`{"role":"compactionSummary","summary":` + quote(summary) +
		`,"tokensBefore":` + strconv.Itoa(tokensBefore) + `,"timestamp":` + quote(timestamp) + `}`)
	return Message{Role: RoleCompactionSummary, Raw: raw, EntryID: entryID}
}

// NewBranchSummary builds the in-memory message for a branch_summary entry.
func NewBranchSummary(summary, fromID, timestamp, entryID string) Message {
	raw := []byte(`{"role":"branchSummary","summary":` + quote(summary) +
		`,"fromId":` + quote(fromID) + `,"timestamp":` + quote(timestamp) + `}`)
	return Message{Role: RoleBranchSummary, Raw: raw, EntryID: entryID}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
