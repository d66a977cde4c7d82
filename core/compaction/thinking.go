package compaction

import (
	"bytes"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/core/tokens"
	"github.com/tidwall/gjson"
)

// planThinking adds to plan the assistant messages of path[from:] older
// than the newest keep ones whose thinking blocks can go (keep ≤ 0: none).
// The newest turns keep their thinking: providers that sign it (Anthropic)
// need the thinking of a tool-use turn still in progress. A pruned message
// loses its thinking blocks and nothing else; the original line goes to
// the same archive as tool outputs and is restored the same way.
func planThinking(path []*session.Entry, from, keep int, plan *PrunePlan) {
	if keep <= 0 {
		return
	}
	seen := 0
	for i := len(path) - 1; i >= from; i-- {
		e := path[i]
		if e.Type != session.TypeMessage || e.Role() != session.RoleAssistant {
			continue
		}
		seen++
		if seen <= keep || e.Get("message.prunedAt").Exists() {
			continue
		}
		n := 0
		e.Get("message.content").ForEach(func(_, b gjson.Result) bool {
			if b.Get("type").Str == "thinking" {
				n += tokens.EstimateText(b.Get("thinking").String())
			}
			return true
		})
		if n <= 0 {
			continue
		}
		plan.Items = append(plan.Items, PrunedItem{EntryID: e.ID, Tokens: n, Saving: n, Thinking: true})
		plan.Saving += n
	}
}

// withoutThinking is a content array with its thinking blocks left out,
// every other block's bytes unchanged.
func withoutThinking(content gjson.Result) []byte {
	var b bytes.Buffer
	b.WriteByte('[')
	first := true
	content.ForEach(func(_, blk gjson.Result) bool {
		if blk.Get("type").Str == "thinking" {
			return true
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		b.WriteString(blk.Raw)
		return true
	})
	b.WriteByte(']')
	return b.Bytes()
}
