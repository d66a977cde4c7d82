package engine

import (
	"encoding/json"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/core/tokens"
	"github.com/pith-dev/pith/hooks"
)

// injectedMessage is the body of the custom_message entry a plugin's
// injected message becomes (docs/behaviour.md §13, round 2).
type injectedMessage struct {
	CustomType string          `json:"customType"`
	Content    string          `json:"content"`
	Display    bool            `json:"display"`
	Details    injectedDetails `json:"details"`
}

type injectedDetails struct {
	Plugin string `json:"plugin"`
}

// injectedDrafts turns the plugins' session.compacting messages into the
// custom_message entries that follow the compaction entry, namespaced by
// plugin. The dispatcher has bounded them already.
func injectedDrafts(msgs []hooks.PluginMessage) []session.Draft {
	var out []session.Draft
	for _, m := range msgs {
		out = append(out, session.Draft{Type: session.TypeCustomMessage, Fields: injectedMessage{
			CustomType: m.CustomType(),
			Content:    m.Content,
			Display:    m.Display,
			Details:    injectedDetails{Plugin: m.Plugin},
		}})
	}
	return out
}

// injectedTokens is the estimate of an injected message in the context.
func injectedTokens(d session.Draft) int {
	m, ok := d.Fields.(injectedMessage)
	if !ok {
		return 0
	}
	raw, _ := json.Marshal(map[string]any{"role": "custom", "content": m.Content})
	return tokens.Estimate(raw)
}
