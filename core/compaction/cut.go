package compaction

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/pith-dev/pith/core/session"
	"github.com/tidwall/gjson"
)

// CutPoint is where a compaction splits a path: entries from FirstKeptIndex
// on are kept verbatim, the ones before are summarized.
type CutPoint struct {
	// FirstKeptIndex is the path index of the first kept entry.
	FirstKeptIndex int
	// TurnStartIndex is the path index of the message that started the turn
	// the cut falls into, or -1 when the cut is at a turn boundary.
	TurnStartIndex int
	// IsSplitTurn is true when the cut falls inside a turn: the entries from
	// TurnStartIndex to FirstKeptIndex are then summarized separately as the
	// turn prefix.
	IsSplitTurn bool
}

// isCutPoint reports whether the kept part may start at e (docs/behaviour.md §4.1). A
// tool result never may: it must stay behind the call that asked for it.
func isCutPoint(e *session.Entry) bool {
	switch e.Type {
	case session.TypeBranchSummary, session.TypeCustomMessage:
		return true
	case session.TypeMessage:
		switch e.Role() {
		case session.RoleUser, session.RoleAssistant, session.RoleBashExecution, session.RoleCustom,
			session.RoleBranchSummary, session.RoleCompactionSummary:
			return true
		}
	}
	return false
}

// isTurnStart reports whether e begins a turn: something the user (or a
// plugin on the user's side) put into the conversation.
func isTurnStart(e *session.Entry) bool {
	switch e.Type {
	case session.TypeBranchSummary, session.TypeCustomMessage:
		return true
	case session.TypeMessage:
		r := e.Role()
		return r == session.RoleUser || r == session.RoleBashExecution
	}
	return false
}

// yieldsMessage reports whether e puts a message into a context.
func yieldsMessage(e *session.Entry) bool {
	switch e.Type {
	case session.TypeMessage, session.TypeCustomMessage, session.TypeBranchSummary:
		return true
	}
	return false
}

// FindCutPoint chooses where to cut path[start:end] so that roughly
// keepRecentTokens of the newest messages are kept (docs/behaviour.md §4).
//
// Differences from the reference, on purpose:
//   - §4.4: whether the turn is split is decided from the first message at
//     or after the cut, so metadata entries moved in front of a user message
//     do not turn the whole previous turn into a "turn prefix"; a cut at a
//     bashExecution, custom_message or branch_summary is clean.
//   - §4.5: the cut moves earlier when it would separate a tool result from
//     its call.
func FindCutPoint(path []*session.Entry, start, end, keepRecentTokens int) CutPoint {
	return findCutPoint(path, start, end, keepRecentTokens, false)
}

// findCutPoint is FindCutPoint with Settings.CutBeforeTrailingResults.
func findCutPoint(path []*session.Entry, start, end, keepRecentTokens int, cutBeforeTrailing bool) CutPoint {
	if start < 0 {
		start = 0
	}
	if end > len(path) {
		end = len(path)
	}
	first := -1
	for i := start; i < end; i++ {
		if isCutPoint(path[i]) {
			first = i
			break
		}
	}
	if first < 0 {
		return CutPoint{FirstKeptIndex: start, TurnStartIndex: -1}
	}

	cut := first
	acc := 0
	for i := end - 1; i >= start; i-- {
		e := path[i]
		if e.Type != session.TypeMessage {
			continue
		}
		acc += e.MessageTokens()
		if acc < keepRecentTokens {
			continue
		}
		// The first cut point at or after the entry that filled the
		// budget. When none follows it (the budget filled inside trailing
		// tool results) the reference keeps everything; with
		// cutBeforeTrailing the cut goes to the nearest cut point before.
		found := false
		for c := i; c < end; c++ {
			if isCutPoint(path[c]) {
				cut, found = c, true
				break
			}
		}
		for c := i; !found && cutBeforeTrailing && c >= first; c-- {
			if isCutPoint(path[c]) {
				cut, found = c, true
			}
		}
		break
	}

	cut = keepToolPairs(path, start, end, cut)

	// Metadata directly before the cut belongs to the kept part.
	for cut > start {
		prev := path[cut-1]
		if prev.Type == session.TypeCompaction || prev.Type == session.TypeMessage {
			break
		}
		cut--
	}

	return cutAt(path, start, end, cut)
}

// cutAt is the cut point at path index cut: whether it splits a turn, and
// where that turn starts.
func cutAt(path []*session.Entry, start, end, cut int) CutPoint {
	cp := CutPoint{FirstKeptIndex: cut, TurnStartIndex: -1}
	firstMsg := -1
	for i := cut; i < end; i++ {
		if yieldsMessage(path[i]) {
			firstMsg = i
			break
		}
	}
	if firstMsg < 0 || isTurnStart(path[firstMsg]) {
		return cp
	}
	for i := cut - 1; i >= start; i-- {
		if isTurnStart(path[i]) {
			cp.TurnStartIndex = i
			cp.IsSplitTurn = true
			break
		}
	}
	return cp
}

// ErrCutRefused: a cut given by another program (pi's firstKeptEntryId)
// is not one this path can be compacted at.
var ErrCutRefused = errors.New("the given first kept entry is not a cut point of the compacted range")

// givenCut is the cut point at the entry id, which must be a cut point
// in path[start:end] (docs/behaviour.md §4.1) that keeps no tool result
// apart from its call.
func givenCut(path []*session.Entry, start, end int, id string) (CutPoint, error) {
	for i := start; i < end; i++ {
		if path[i].ID != id {
			continue
		}
		if !isCutPoint(path[i]) || keepToolPairs(path, start, end, i) != i {
			return CutPoint{}, fmt.Errorf("%w: entry %s", ErrCutRefused, id)
		}
		return cutAt(path, start, end, i), nil
	}
	return CutPoint{}, fmt.Errorf("%w: no entry %s after the last compaction on the path", ErrCutRefused, id)
}

// keepToolPairs moves cut earlier, to the assistant message that made the
// call, while a kept tool result answers a call made before the cut (docs/behaviour.md
// §4.5). Results always follow their calls in a session, so this is the
// only way a pair can be separated; a call whose result never came (an
// aborted turn) has nothing to keep it with.
//
// One backward sweep from the end does it: every result seen waits for its
// call; an assistant at i whose call a result at r >= cut waits for, with
// i < cut, pulls the cut to i. The sweep ends below the cut once no kept
// result is still waiting, so a normal session only reads its kept part.
func keepToolPairs(path []*session.Entry, start, end, cut int) int {
	waiting := map[string]int{} // call id -> index of the result
	keptWaiting := 0            // waiting results at or after cut
	for i := end - 1; i >= start; i-- {
		if i < cut && keptWaiting == 0 {
			break
		}
		e := path[i]
		if e.Type != session.TypeMessage {
			continue
		}
		switch e.Role() {
		case session.RoleToolResult:
			if id := e.Get("message.toolCallId").String(); id != "" {
				if _, dup := waiting[id]; !dup {
					waiting[id] = i
					if i >= cut {
						keptWaiting++
					}
				}
			}
		case session.RoleAssistant:
			for _, id := range toolCallIDs(e) {
				r, ok := waiting[id]
				if !ok {
					continue
				}
				delete(waiting, id)
				if r >= cut {
					keptWaiting--
				}
				if i < cut && r >= cut {
					// Keep the call with its result; results between the
					// new and the old cut are kept now too.
					for _, rr := range waiting {
						if rr >= i && rr < cut {
							keptWaiting++
						}
					}
					cut = i
				}
			}
		}
	}
	return cut
}

var toolCallMarker = []byte(`"toolCall"`)

// toolCallIDs lists the ids of an assistant entry's tool calls.
func toolCallIDs(e *session.Entry) []string {
	if !bytes.Contains(e.Raw, toolCallMarker) {
		return nil
	}
	var ids []string
	e.Get("message.content").ForEach(func(_, b gjson.Result) bool {
		if b.Get("type").Str == "toolCall" {
			if id := b.Get("id").String(); id != "" {
				ids = append(ids, id)
			}
		}
		return true
	})
	return ids
}
