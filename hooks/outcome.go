package hooks

import "encoding/json"

// The host's combined answer to each event and what a supplied compaction
// or summary is checked against. They are contract, not machinery: the
// engine's hook interfaces are written in them, and a plugin's tests read
// them (sdktest.Dispatcher) to see what the host made of its answers.

// BeforeCompactOutcome is the combined answer to session_before_compact.
type BeforeCompactOutcome struct {
	Cancelled    bool
	CancelReason string
	// Compaction is a validated plugin-supplied compaction, or nil.
	Compaction *Compaction
	// Plugin names the plugin whose cancel or compaction ended the chain.
	Plugin string
}

// CompactingOutcome is the combined answer to session.compacting.
type CompactingOutcome struct {
	// Context holds every plugin's context lines, in priority order.
	Context []string
	// Prompt is the first non-empty prompt in priority order.
	Prompt string
	// PromptFrom names the plugin whose prompt was taken.
	PromptFrom string
	// PreserveData is a JSON object keyed by plugin name, nil when no plugin
	// returned any.
	PreserveData json.RawMessage
	// Messages are every plugin's injected messages, in priority order.
	Messages []PluginMessage
}

// PluginMessage is an injected message and the plugin it came from.
type PluginMessage struct {
	Plugin string
	InjectedMessage
}

// CustomType is the message's namespaced customType: the plugin's name,
// "/" and the message's own type when it has one.
func (m PluginMessage) CustomType() string {
	if m.Type == "" {
		return m.Plugin
	}
	return m.Plugin + "/" + m.Type
}

// BeforeTreeOutcome is the combined answer to session_before_tree.
type BeforeTreeOutcome struct {
	Cancelled    bool
	CancelReason string
	// Summary is a validated plugin-supplied summary, or nil. The caller uses
	// it only when the user wanted a summary.
	Summary *BranchSummary
	// Plugin names the plugin whose cancel or summary ended the chain.
	Plugin string
	// CustomInstructions and ReplaceInstructions come from the first plugin
	// that returned instructions; Label from the first that returned one.
	CustomInstructions  string
	ReplaceInstructions bool
	Label               string
}

// CompactionLimits is what a plugin-supplied compaction is checked against.
type CompactionLimits struct {
	// MaxSummaryTokens is the hard cap on the summary's estimated tokens;
	// zero means no cap.
	MaxSummaryTokens int
	// AllowedFirstKeptIDs are the entry ids a compaction may keep from: the
	// path entries within the compacted range. When nil the id is only
	// required to be non-empty.
	AllowedFirstKeptIDs []string
	// EstimateTokens estimates a text's tokens; nil means docs/behaviour.md §3's plain-text estimate.
	EstimateTokens func(text string) int
}

// SummaryLimits is what a plugin-supplied branch summary is checked against.
type SummaryLimits struct {
	// MaxSummaryTokens is the hard cap; zero means no cap.
	MaxSummaryTokens int
	// EstimateTokens estimates a text's tokens; nil means docs/behaviour.md §3's plain-text estimate.
	EstimateTokens func(text string) int
}
