package transcript

import (
	"bytes"
	"encoding/json"
	"strconv"
	"time"

	"github.com/pith-dev/pith/core/prompts"
	"github.com/pith-dev/pith/core/session"
	"github.com/tidwall/gjson"
)

// ConvertForLLM turns a context (session.BuildContext's messages) into the
// messages a model is sent (docs/behaviour.md §2.5, pi's convertToLlm): user, assistant
// and toolResult messages stay byte for byte; a compaction summary and a
// branch summary become a user message with one text block that frames the
// summary in <summary> tags; a custom message becomes a user message with
// its content (a string as one text block); a bash run becomes a user
// message with the command, its full output in a fence and how it ended,
// or nothing when it was excluded from the context. Other roles are left
// out. Bookkeeping fields (customType, display, details, tokensBefore,
// fromId) are dropped; the timestamp is kept.
func ConvertForLLM(msgs []session.Message) []json.RawMessage {
	out := make([]json.RawMessage, 0, len(msgs))
	for _, m := range msgs {
		r := gjson.ParseBytes(m.Raw)
		switch m.Role {
		case session.RoleUser, session.RoleAssistant, session.RoleToolResult:
			out = append(out, m.Raw)
		case session.RoleCompactionSummary:
			out = append(out, userText(prompts.CompactionSummaryText(r.Get("summary").String()), r))
		case session.RoleBranchSummary:
			out = append(out, userText(prompts.BranchSummaryText(r.Get("summary").String()), r))
		case session.RoleCustom:
			content := r.Get("content")
			blocks := []byte(content.Raw)
			if content.Type == gjson.String {
				blocks = textBlocks(content.Str)
			} else if !content.IsArray() {
				blocks = []byte("[]")
			}
			out = append(out, userMessage(blocks, r))
		case session.RoleBashExecution:
			if truthy(r.Get("excludeFromContext")) {
				continue
			}
			out = append(out, userText(bashText(r, func(s string) string { return s }), r))
		}
	}
	return out
}

// textBlocks is [{"type":"text","text":text}], with <, > and & as they are.
func textBlocks(text string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.Encode(text)
	return []byte(`[{"type":"text","text":` + string(bytes.TrimSuffix(buf.Bytes(), []byte("\n"))) + `}]`)
}

func userText(text string, src gjson.Result) json.RawMessage {
	return userMessage(textBlocks(text), src)
}

// userMessage is {"role":"user","content":…,"timestamp":…}: the source
// message's timestamp in milliseconds, as agent messages carry it (the
// summaries built from entries have the entry's ISO time).
func userMessage(content []byte, src gjson.Result) json.RawMessage {
	b := make([]byte, 0, len(content)+64)
	b = append(b, `{"role":"user","content":`...)
	b = append(b, content...)
	ms, ok := int64(0), false
	switch ts := src.Get("timestamp"); ts.Type {
	case gjson.Number:
		ms, ok = ts.Int(), true
	case gjson.String:
		if t, err := time.Parse(time.RFC3339Nano, ts.Str); err == nil {
			ms, ok = t.UnixMilli(), true
		}
	}
	if ok {
		b = append(b, `,"timestamp":`...)
		b = strconv.AppendInt(b, ms, 10)
	}
	b = append(b, '}')
	return b
}
