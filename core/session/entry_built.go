package session

import (
	"sync/atomic"

	"github.com/pith-dev/pith/core/tokens"
	"github.com/tidwall/gjson"
)

// builtMessage is the message of an entry whose line holds none but
// stands for one: a custom_message's custom message, a branch_summary's
// branchSummary message. It is built on first use and kept on the entry,
// as a message entry keeps its estimate: preparing a compaction estimates
// the range's messages and then hands the same messages to the summary,
// and the daemon prepares the same session again and again.
type builtMessage struct {
	msg Message
	// empty is a branch_summary whose summary is empty: a context leaves
	// it out, a summary of the path keeps it (docs/behaviour.md §5).
	empty bool
	// tokens is tokens.Estimate of msg plus one, 0 until computed.
	tokens atomic.Int64
}

// builtMessage returns the entry's built message, or nil for an entry of
// another type. Two goroutines may both build it; either result is the
// same message.
func (e *Entry) builtMessage() *builtMessage {
	if b := e.built.Load(); b != nil {
		return b
	}
	b := &builtMessage{}
	switch e.Type {
	case TypeCustomMessage:
		b.msg = customFromEntry(e)
	case TypeBranchSummary:
		var f [3][]byte
		firstFields(e.Raw, branchSummaryKeys[:], f[:])
		s := gjson.ParseBytes(f[0]).String()
		b.msg = NewBranchSummary(s, gjson.ParseBytes(f[1]).String(), gjson.ParseBytes(f[2]).String(), e.ID)
		b.empty = s == ""
	default:
		return nil
	}
	// Every caller gets the same bytes: one that appends to its copy
	// must not write into the others'.
	b.msg.Raw = b.msg.Raw[:len(b.msg.Raw):len(b.msg.Raw)]
	e.built.Store(b)
	return b
}

// BranchSummaryMessage is the branchSummary message of a branch_summary
// entry even when its summary is empty, which EntryMessage leaves out but
// a summary of the path includes (docs/behaviour.md §5); ok is false for
// another entry.
func (e *Entry) BranchSummaryMessage() (Message, bool) {
	if e.Type != TypeBranchSummary {
		return Message{}, false
	}
	return e.builtMessage().msg, true
}

// EntryMessageTokens is tokens.Estimate of the message EntryMessage gives
// for the entry, 0 when it gives none: MessageTokens for a message entry,
// the built message's estimate, kept with it, for a custom_message or a
// branch_summary. An empty branch_summary's message, which
// BranchSummaryMessage gives, estimates to 0 as well.
func (e *Entry) EntryMessageTokens() int {
	if e.Type == TypeMessage {
		return e.MessageTokens()
	}
	b := e.builtMessage()
	if b == nil || b.empty {
		return 0
	}
	if v := b.tokens.Load(); v > 0 {
		return int(v - 1)
	}
	n := tokens.Estimate(b.msg.Raw)
	b.tokens.Store(int64(n) + 1)
	return n
}

// The fields a built message is made of, in the order a custom message
// writes them.
var (
	customKeys        = [...]string{"customType", "content", "display", "details", "timestamp"}
	branchSummaryKeys = [...]string{"summary", "fromId", "timestamp"}
)

// customFromEntry builds the custom message of a custom_message entry,
// carrying its customType, content, display, details and timestamp
// unchanged.
func customFromEntry(e *Entry) Message {
	var f [len(customKeys)][]byte
	firstFields(e.Raw, customKeys[:], f[:])
	buf := make([]byte, 0, len(e.Raw)+32)
	buf = append(buf, `{"role":"custom"`...)
	for i, v := range f {
		if v != nil {
			buf = append(buf, ',', '"')
			buf = append(buf, customKeys[i]...)
			buf = append(buf, '"', ':')
			buf = append(buf, v...)
		}
	}
	buf = append(buf, '}')
	return Message{Role: RoleCustom, Raw: buf, EntryID: e.ID}
}

// firstFields sets out[i] to the raw value of the first top-level member
// of line named keys[i] (nil when there is none), as a gjson search for
// each key finds it (keys compared decoded, the first of a repeated key),
// in one walk over the line instead of one per key: the line's long
// content is skipped once, not once for each field after it.
func firstFields(line []byte, keys []string, out [][]byte) {
	ObjectFields(line, func(key string, v []byte) bool {
		for i, k := range keys {
			if k == key && out[i] == nil {
				out[i] = v
			}
		}
		return true
	})
}
