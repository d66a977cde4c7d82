package tokens

import "github.com/tidwall/gjson"

// ContextEstimate is the context-token total of a message list and how it
// was made.
type ContextEstimate struct {
	Tokens         int
	UsageTokens    int
	TrailingTokens int
	// LastUsageIndex is the index of the assistant message whose usage was
	// used, or -1 when none had a valid one.
	LastUsageIndex int
}

// UsageTokens returns an assistant message's context size from its usage:
// totalTokens, else input+output+cacheRead+cacheWrite. ok is false when the
// message is not an assistant message with usage, or it was aborted or
// errored (its usage does not describe a real context).
func UsageTokens(raw []byte) (tokens int, ok bool) {
	m := gjson.Parse(unsafeString(raw))
	if m.Get("role").Str != "assistant" {
		return 0, false
	}
	switch m.Get("stopReason").Str {
	case "aborted", "error":
		return 0, false
	}
	u := m.Get("usage")
	if !u.IsObject() {
		return 0, false
	}
	if t := u.Get("totalTokens").Int(); t != 0 {
		return int(t), true
	}
	return int(u.Get("input").Int() + u.Get("output").Int() + u.Get("cacheRead").Int() + u.Get("cacheWrite").Int()), true
}

// PromptTokens returns input+cacheRead+cacheWrite of a valid assistant usage.
func PromptTokens(raw []byte) (tokens int, ok bool) {
	if _, ok := UsageTokens(raw); !ok {
		return 0, false
	}
	u := gjson.Parse(unsafeString(raw)).Get("usage")
	return int(u.Get("input").Int() + u.Get("cacheRead").Int() + u.Get("cacheWrite").Int()), true
}

// Context computes the context tokens of n messages, raw(i) giving the JSON
// of message i (docs/behaviour.md §3): the last valid assistant usage plus the estimates
// of every message after it, or the sum of all estimates without one.
func Context(n int, raw func(i int) []byte) ContextEstimate {
	return ContextSince(n, raw, 0)
}

// ContextSince is Context where only assistant messages at index from or
// later may supply the usage. After a compaction, usage reported before it
// measures the old, longer context; pi's reference estimate still uses it,
// which makes a freshly compacted session look as full as before. Pith's
// CLI and engine pass the index of the first message after the compaction.
func ContextSince(n int, raw func(i int) []byte, from int) ContextEstimate {
	for i := n - 1; i >= max(0, from); i-- {
		if u, ok := UsageTokens(raw(i)); ok {
			trailing := 0
			for j := i + 1; j < n; j++ {
				trailing += Estimate(raw(j))
			}
			return ContextEstimate{Tokens: u + trailing, UsageTokens: u, TrailingTokens: trailing, LastUsageIndex: i}
		}
	}
	sum := 0
	for i := 0; i < n; i++ {
		sum += Estimate(raw(i))
	}
	return ContextEstimate{Tokens: sum, TrailingTokens: sum, LastUsageIndex: -1}
}

// ShouldCompact is the threshold test of docs/behaviour.md §3.
func ShouldCompact(enabled bool, contextTokens, contextWindow, reserveTokens int) bool {
	return enabled && contextTokens > contextWindow-reserveTokens
}
