package engine

import (
	"regexp"
	"sync"

	"github.com/pith-dev/pith/core/session"
	"github.com/tidwall/gjson"
)

// overflowPattern recognises one provider's way of saying that the request
// did not fit the model's context window.
type overflowPattern struct {
	provider string
	re       *regexp.Regexp
}

// overflowPatterns is matched against the errorMessage of an assistant
// message whose stopReason is "error". Each line names who sends the text;
// the tests hold a real message for every line. Compiled on first use:
// most commands never look at an error message, and every command would
// pay for the compilation at start.
var overflowPatterns = sync.OnceValue(func() []overflowPattern {
	return []overflowPattern{
		{"Anthropic", regexp.MustCompile(`(?i)prompt is too long`)},
		{"Anthropic (HTTP 413)", regexp.MustCompile(`(?i)request_too_large`)},
		{"Anthropic (input + max_tokens)", regexp.MustCompile("(?i)input length and `?max_tokens`? exceed context limit")},
		{"OpenAI, Azure, OpenRouter, vLLM, DeepSeek", regexp.MustCompile(`(?i)maximum context length is \d+ tokens`)},
		{"OpenAI error code", regexp.MustCompile(`(?i)context[_ ]length[_ ]exceeded`)},
		{"OpenAI Responses", regexp.MustCompile(`(?i)exceeds the context window`)},
		{"Google Gemini", regexp.MustCompile(`(?i)input token count.*exceeds the maximum`)},
		{"Amazon Bedrock", regexp.MustCompile(`(?i)input is too long for requested model`)},
		{"xAI", regexp.MustCompile(`(?i)maximum prompt length is \d+`)},
		{"Groq", regexp.MustCompile(`(?i)reduce the length of the messages`)},
		{"Mistral", regexp.MustCompile(`(?i)too large for model with \d+ maximum context length`)},
		{"vLLM", regexp.MustCompile(`(?i)is longer than the maximum model length`)},
		{"llama.cpp", regexp.MustCompile(`(?i)exceeds the available context size`)},
		{"LM Studio", regexp.MustCompile(`(?i)greater than the context length`)},
		{"Ollama", regexp.MustCompile(`(?i)prompt too long; exceeded (?:max )?context length`)},
		{"GitHub Copilot", regexp.MustCompile(`(?i)token count of \d+ exceeds the limit of \d+`)},
		{"MiniMax", regexp.MustCompile(`(?i)context window exceeds limit`)},
		{"Kimi", regexp.MustCompile(`(?i)exceeded model token limit`)},
		{"z.ai", regexp.MustCompile(`(?i)model_context_window_exceeded`)},
		{"generic", regexp.MustCompile(`(?i)too many tokens`)},
		{"generic", regexp.MustCompile(`(?i)token limit exceeded`)},
		{"HTTP 400/413 without body", regexp.MustCompile(`(?i)^\s*(?:HTTP\s*)?4(?:00|13)\s*(?:status code\s*)?(?:\(no body\))?\s*$`)},
		{"HTTP 413", regexp.MustCompile(`(?i)\b413\b.*(?:no body|too large)|request entity too large|payload too large`)},
	}
})

// notOverflowPatterns win over overflowPatterns: throttling messages that
// happen to say "too many tokens" are rate limits, for the retry path.
var notOverflowPatterns = sync.OnceValue(func() []*regexp.Regexp {
	return []*regexp.Regexp{
		regexp.MustCompile(`(?i)rate.?limit`),
		regexp.MustCompile(`(?i)too many requests`),
		regexp.MustCompile(`(?i)throttl`),
		regexp.MustCompile(`(?i)^service unavailable:`),
		regexp.MustCompile(`(?i)please wait before trying again`),
	}
})

// OverflowProvider reports whether an error text is a context-overflow
// error, and whose wording it matched.
func OverflowProvider(errorMessage string) (provider string, ok bool) {
	if errorMessage == "" {
		return "", false
	}
	for _, re := range notOverflowPatterns() {
		if re.MatchString(errorMessage) {
			return "", false
		}
	}
	for _, p := range overflowPatterns() {
		if p.re.MatchString(errorMessage) {
			return p.provider, true
		}
	}
	return "", false
}

// IsContextOverflow reports whether an assistant message (its JSON) says
// the request overflowed the model's context window (docs/behaviour.md §9.2): an error
// whose text matches a known provider pattern, or — when contextWindow is
// known — a "silent" overflow where the provider answered although input
// plus cache reads exceed the window, or truncated the input to fill the
// window and had no room left to answer. Such errors must not go to the
// generic retry path: retrying the same context fails the same way.
func IsContextOverflow(msg []byte, contextWindow int) bool {
	m := gjson.ParseBytes(msg)
	if m.Get("role").Str != "assistant" {
		return false
	}
	stop := m.Get("stopReason").Str
	if stop == "error" {
		_, ok := OverflowProvider(m.Get("errorMessage").String())
		return ok
	}
	if contextWindow <= 0 || stop == "aborted" {
		return false
	}
	u := m.Get("usage")
	input := u.Get("input").Int() + u.Get("cacheRead").Int()
	if input > int64(contextWindow) {
		return true
	}
	// A provider that truncates an oversized prompt to the window stops
	// for length without producing anything.
	return stop == "length" && u.Get("output").Int() == 0 && input*100 >= int64(contextWindow)*99
}

// fromCurrentModel reports whether the assistant message of e came from
// the session's model: the one the latest model_change on its path
// chose, or, when the session has none, the nearest assistant message's
// (docs/behaviour.md §2). An overflow from another model — a request
// still out when the user switched to a larger window — says nothing
// about the current model's context, so it is not recovered (pi compares
// the failed message's provider and model with the session's the same
// way). A model_change outranks a later assistant message here: that
// message may be the old model's. When the message or the session names
// no model, nothing says otherwise, and it is.
func (s *Session) fromCurrentModel(e *session.Entry) bool {
	provider, model := e.MessageModel()
	if provider == "" && model == "" {
		return true
	}
	tree := s.store.Tree()
	parent := tree.Get(e.ParentID)
	cur, found := "", false
	curProvider := ""
	// Only an overflow comes here: a walk over the path is affordable.
	for p, n := parent, len(tree.Entries); p != nil && n > 0 && !found; p, n = tree.Get(p.ParentID), n-1 {
		if p.Type == session.TypeModelChange {
			curProvider, cur, found = p.Get("provider").String(), p.Get("modelId").String(), true
		}
	}
	if !found {
		if parent == nil {
			return true
		}
		st := tree.Settings(parent)
		curProvider, cur = st.Provider, st.Model
	}
	if curProvider == "" && cur == "" {
		return true
	}
	return provider == curProvider && model == cur
}
