package llm

import (
	"fmt"
	"net/url"
	"strings"
	"time"
)

// DefaultMaxTokens is the output cap used when a request names none.
const DefaultMaxTokens = 8192

// DefaultRequestTimeout bounds one HTTP attempt of a provider. Summaries are
// produced without streaming, so the whole answer must arrive within it;
// long summaries from slow local models need minutes.
const DefaultRequestTimeout = 5 * time.Minute

// prefixLimit maps a model-id prefix to the model's own output limit.
type prefixLimit struct {
	prefix string
	tokens int
}

// Output limits of well-known models (max output tokens as the providers
// document them). The longest matching prefix wins, so dated snapshots
// inherit their family's figure unless listed themselves. An unknown model
// gets no clamp beyond what the options say.
var openAIOutputLimits = []prefixLimit{
	{"gpt-3.5-turbo", 4096},
	{"gpt-4", 8192},
	{"gpt-4-turbo", 4096},
	{"gpt-4o", 16384},
	{"gpt-4o-2024-05-13", 4096},
	{"gpt-4.1", 32768},
	{"gpt-5", 128000},
	{"gpt-5-chat", 16384},
	{"gpt-5.1-chat", 16384},
	{"gpt-5.2-chat", 16384},
	{"gpt-5.3-chat", 16384},
	{"gpt-5.3-codex-spark", 32000},
	{"o1", 100000},
	{"o1-mini", 65536},
	{"o3", 100000},
	{"o4-mini", 100000},
}

var anthropicOutputLimits = []prefixLimit{
	{"claude-3-haiku", 4096},
	{"claude-3-opus", 4096},
	{"claude-3-sonnet", 4096},
	{"claude-3-5-haiku", 8192},
	{"claude-3-5-sonnet", 8192},
	{"claude-3-7-sonnet", 64000},
	{"claude-haiku-4", 64000},
	{"claude-sonnet-4", 64000},
	{"claude-opus-4", 32000},
	{"claude-opus-4-5", 64000},
	{"claude-opus-4-6", 128000},
	{"claude-opus-4-7", 128000},
}

// baseModel lowercases a model id and drops a router prefix such as
// "openai/" (OpenRouter, LiteLLM), which the tables do not carry.
func baseModel(model string) string {
	m := strings.ToLower(strings.TrimSpace(model))
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:]
	}
	return m
}

// lookupLimit returns the output limit of the longest prefix of model in
// table, or 0.
func lookupLimit(table []prefixLimit, model string) int {
	m := baseModel(model)
	best, bestLen := 0, -1
	for _, e := range table {
		if strings.HasPrefix(m, e.prefix) && len(e.prefix) > bestLen {
			best, bestLen = e.tokens, len(e.prefix)
		}
	}
	return best
}

// clampTokens applies the default and the model's limit (0: unknown) to a
// requested output cap.
func clampTokens(requested, limit int) int {
	n := requested
	if n <= 0 {
		n = DefaultMaxTokens
	}
	if limit > 0 && n > limit {
		n = limit
	}
	return n
}

// normLevel lowercases a reasoning level and maps the ways of saying "no
// reasoning" to "".
func normLevel(level string) string {
	l := strings.ToLower(strings.TrimSpace(level))
	switch l {
	case "off", "none", "false", "disabled":
		return ""
	}
	return l
}

// levelRank orders the reasoning levels callers may ask for.
var levelRank = map[string]int{"minimal": 0, "low": 1, "medium": 2, "high": 3, "xhigh": 4, "max": 5}

// nearestLevel picks from accepted (weakest first) the level closest to
// want, rounding down on ties; "" for an unknown level.
func nearestLevel(want string, accepted []string) string {
	w, ok := levelRank[want]
	if !ok {
		return ""
	}
	best, bestDist := "", 1<<30
	for _, a := range accepted {
		d := levelRank[a] - w
		if d < 0 {
			d = -d
		}
		if d < bestDist {
			best, bestDist = a, d
		}
	}
	return best
}

// checkBaseURL rejects a base URL a request would only fail on later.
func checkBaseURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("invalid base URL %q: %w", raw, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("invalid base URL %q: want http(s)://host[:port]/path", raw)
	}
	return nil
}
