package engine

import (
	"bytes"
	"time"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/core/tokens"
	"github.com/tidwall/gjson"
)

// accounting is the running context-token count of the live list (docs/behaviour.md
// §3): the usage of the last assistant message that reported a valid,
// current one, plus the estimates of every message after it. It is updated
// per appended message, so a turn costs O(size of the new message) however
// long the session is.
type accounting struct {
	usage    int
	usageAt  int // index into the live list, -1 when no usage counts
	trailing int
}

func newAccounting() accounting { return accounting{usageAt: -1} }

// add accounts for message m appended at index i. fresh is false for an
// assistant message whose usage describes a context that no longer exists
// (one from before the latest compaction).
func (a *accounting) add(i int, m session.Message, fresh bool) {
	if fresh && m.Role == session.RoleAssistant {
		if u, ok := tokens.UsageTokens(m.Raw); ok {
			a.usage, a.usageAt, a.trailing = u, i, 0
			return
		}
	}
	a.trailing += tokens.Estimate(m.Raw)
}

func (a accounting) tokens() int { return a.usage + a.trailing }

var stopReasonError = []byte(`"stopReason":"error"`)

// isOverflowError reports whether m is an assistant error that says the
// context overflowed; such messages are kept out of the live context.
func isOverflowError(m session.Message) bool {
	if m.Role != session.RoleAssistant || !bytes.Contains(m.Raw, stopReasonError) {
		return false
	}
	return IsContextOverflow(m.Raw, 0)
}

// liveContext is the live message list built from the session at leaf,
// its accounting, and the time of the latest compaction on the path.
type liveContext struct {
	messages   []session.Message
	acct       accounting
	compaction time.Time
	// toolTokens is the estimate of the tool results in messages, and
	// newTools says a tool result arrived since pruning last looked: no
	// plan can save more than the tool output there is, and without a new
	// result the last empty plan is still empty, so automatic pruning
	// walks the path only when it may find something.
	toolTokens int
	newTools   bool
}

// countTools sets toolTokens from the messages.
func (lc *liveContext) countTools() {
	lc.toolTokens, lc.newTools = 0, true
	for _, m := range lc.messages {
		if m.Role == session.RoleToolResult {
			lc.toolTokens += tokens.Estimate(m.Raw)
		}
	}
}

// buildLive builds the live context from the session tree at leaf. Only
// usage reported after the latest compaction counts: kept messages carry
// the usage of the old, larger context.
func buildLive(tree *session.Tree, leaf *session.Entry) liveContext {
	lc := buildMessages(tree, leaf)
	lc.countTools()
	return lc
}

func buildMessages(tree *session.Tree, leaf *session.Entry) liveContext {
	lc := liveContext{acct: newAccounting()}
	if leaf == nil {
		return lc
	}
	bc := tree.BuildContext(leaf.ID)
	fresh := map[string]bool(nil) // nil: every message is fresh
	for i := len(bc.Path) - 1; i >= 0; i-- {
		if e := bc.Path[i]; e.Type == session.TypeCompaction {
			lc.compaction = entryTime(e)
			fresh = make(map[string]bool, len(bc.Path)-i)
			for _, after := range bc.Path[i+1:] {
				fresh[after.ID] = true
			}
			break
		}
	}
	lc.messages = make([]session.Message, 0, len(bc.Messages))
	for _, m := range bc.Messages {
		if !isOverflowError(m) {
			lc.messages = append(lc.messages, m)
		}
	}
	// Walk back to the last fresh usage; estimate the rest only if none.
	for i := len(lc.messages) - 1; i >= 0; i-- {
		m := lc.messages[i]
		if fresh != nil && !fresh[m.EntryID] {
			break
		}
		if m.Role == session.RoleAssistant {
			if u, ok := tokens.UsageTokens(m.Raw); ok {
				lc.acct = accounting{usage: u, usageAt: i}
				for _, t := range lc.messages[i+1:] {
					lc.acct.trailing += tokens.Estimate(t.Raw)
				}
				return lc
			}
		}
	}
	for _, m := range lc.messages {
		lc.acct.trailing += tokens.Estimate(m.Raw)
	}
	return lc
}

func entryTime(e *session.Entry) time.Time {
	t, err := time.Parse(time.RFC3339Nano, e.Timestamp())
	if err != nil {
		return time.Time{}
	}
	return t
}

// messageTime is an agent message's own timestamp (milliseconds since the
// epoch, as pi writes it), zero when it has none.
func messageTime(raw []byte) time.Time {
	ms := gjson.GetBytes(raw, "timestamp")
	if ms.Type != gjson.Number || ms.Int() <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms.Int())
}
