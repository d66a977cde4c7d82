package dispatch

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/pith-dev/pith/core/jsondepth"

	"github.com/pith-dev/pith/hooks"
)

// DefaultLimits are the limits of a plugin configured without any: far
// above what a well-behaved plugin sends, far below what would hurt the
// host or bloat a session file.
func DefaultLimits() hooks.Limits {
	return hooks.Limits{
		ContextBytes:         256 << 10,
		PromptBytes:          64 << 10,
		SummaryBytes:         256 << 10,
		PreserveDataBytes:    1 << 20,
		DetailsBytes:         1 << 20,
		JSONDepth:            64,
		PathEntriesBytes:     16 << 20,
		MessagesBytes:        64 << 20,
		CompletePromptBytes:  4 << 20,
		CompleteMaxTokens:    16384,
		EstimateBytes:        64 << 20,
		CompleteCalls:        16,
		HostCallsInFlight:    4,
		StderrLinesPerSecond: 200,
		StderrBytesPerSecond: 256 << 10,
		StderrLineBytes:      16 << 10,
	}
}

// LimitsOrDefaults returns l with every zero (or negative) field set to
// its default.
func LimitsOrDefaults(l hooks.Limits) hooks.Limits {
	d := DefaultLimits()
	pick := func(v, def int) int {
		if v > 0 {
			return v
		}
		return def
	}
	return hooks.Limits{
		ContextBytes:         pick(l.ContextBytes, d.ContextBytes),
		PromptBytes:          pick(l.PromptBytes, d.PromptBytes),
		SummaryBytes:         pick(l.SummaryBytes, d.SummaryBytes),
		PreserveDataBytes:    pick(l.PreserveDataBytes, d.PreserveDataBytes),
		DetailsBytes:         pick(l.DetailsBytes, d.DetailsBytes),
		JSONDepth:            pick(l.JSONDepth, d.JSONDepth),
		PathEntriesBytes:     pick(l.PathEntriesBytes, d.PathEntriesBytes),
		MessagesBytes:        pick(l.MessagesBytes, d.MessagesBytes),
		CompletePromptBytes:  pick(l.CompletePromptBytes, d.CompletePromptBytes),
		CompleteMaxTokens:    pick(l.CompleteMaxTokens, d.CompleteMaxTokens),
		EstimateBytes:        pick(l.EstimateBytes, d.EstimateBytes),
		CompleteCalls:        pick(l.CompleteCalls, d.CompleteCalls),
		HostCallsInFlight:    pick(l.HostCallsInFlight, d.HostCallsInFlight),
		StderrLinesPerSecond: pick(l.StderrLinesPerSecond, d.StderrLinesPerSecond),
		StderrBytesPerSecond: pick(l.StderrBytesPerSecond, d.StderrBytesPerSecond),
		StderrLineBytes:      pick(l.StderrLineBytes, d.StderrLineBytes),
	}
}

// ErrOverLimit marks a plugin result, payload or host call over one of the
// plugin's Limits; LimitError says which.
var ErrOverLimit = errors.New("over a plugin limit")

// LimitError names the limit a value went over, by its configuration key.
type LimitError struct {
	What  string // what was measured: "preserveData", "context lines", …
	Limit string // the key under plugins[].limits
	Got   int
	Max   int
}

func (e *LimitError) Error() string {
	unit := "bytes"
	switch e.Limit {
	case "jsonDepth":
		return fmt.Sprintf("%s is nested deeper than limits.%s (%d)", e.What, e.Limit, e.Max)
	case "completeCalls", "hostCallsInFlight":
		return fmt.Sprintf("%s: over limits.%s (%d)", e.What, e.Limit, e.Max)
	case "completeMaxTokens":
		unit = "tokens"
	}
	return fmt.Sprintf("%s is %d %s, over limits.%s (%d)", e.What, e.Got, unit, e.Limit, e.Max)
}

// Is makes a LimitError match ErrOverLimit.
func (e *LimitError) Is(target error) bool { return target == ErrOverLimit }

func overBytes(what, limit string, got, max int) error {
	if got > max {
		return &LimitError{What: what, Limit: limit, Got: got, Max: max}
	}
	return nil
}

// checkJSONLimits bounds a JSON value's size and nesting.
func checkJSONLimits(what, sizeLimit string, raw json.RawMessage, max, depth int) error {
	if err := overBytes(what, sizeLimit, len(raw), max); err != nil {
		return err
	}
	if jsondepth.Exceeds(raw, depth) {
		return &LimitError{What: what, Limit: "jsonDepth", Max: depth}
	}
	return nil
}

// CheckBeforeCompactResult bounds a session_before_compact answer.
func CheckBeforeCompactResult(r *hooks.BeforeCompactResult, l hooks.Limits) error {
	if r == nil {
		return nil
	}
	l = LimitsOrDefaults(l)
	if err := overBytes("cancelReason", "promptBytes", len(r.CancelReason), l.PromptBytes); err != nil {
		return err
	}
	c := r.Compaction
	if c == nil || r.Cancel {
		return nil
	}
	return errors.Join(
		overBytes("summary", "summaryBytes", len(c.Summary)+len(c.ShortSummary), l.SummaryBytes),
		checkJSONLimits("details", "detailsBytes", c.Details, l.DetailsBytes, l.JSONDepth),
		checkJSONLimits("preserveData", "preserveDataBytes", c.PreserveData, l.PreserveDataBytes, l.JSONDepth),
	)
}

// CheckCompactingResult bounds a session.compacting answer.
func CheckCompactingResult(r *hooks.CompactingResult, l hooks.Limits) error {
	if r == nil {
		return nil
	}
	l = LimitsOrDefaults(l)
	total := 0
	for _, c := range r.Context {
		total += len(c)
	}
	var msgErr error
	for _, m := range r.Messages {
		total += len(m.Content) + len(m.Type)
		if strings.TrimSpace(m.Content) == "" {
			msgErr = errors.New("an injected message is empty")
		}
	}
	if len(r.Messages) > hooks.MaxInjectedMessages {
		msgErr = fmt.Errorf("%d injected messages, at most %d", len(r.Messages), hooks.MaxInjectedMessages)
	}
	return errors.Join(
		msgErr,
		overBytes("context lines and messages", "contextBytes", total, l.ContextBytes),
		overBytes("prompt", "promptBytes", len(r.Prompt), l.PromptBytes),
		checkJSONLimits("preserveData", "preserveDataBytes", r.PreserveData, l.PreserveDataBytes, l.JSONDepth),
	)
}

// CheckBeforeTreeResult bounds a session_before_tree answer.
func CheckBeforeTreeResult(r *hooks.BeforeTreeResult, l hooks.Limits) error {
	if r == nil {
		return nil
	}
	l = LimitsOrDefaults(l)
	errs := []error{
		overBytes("cancelReason", "promptBytes", len(r.CancelReason), l.PromptBytes),
		overBytes("customInstructions", "promptBytes", len(r.CustomInstructions), l.PromptBytes),
		overBytes("label", "promptBytes", len(r.Label), l.PromptBytes),
	}
	if s := r.Summary; s != nil {
		errs = append(errs,
			overBytes("summary", "summaryBytes", len(s.Summary), l.SummaryBytes),
			checkJSONLimits("details", "detailsBytes", s.Details, l.DetailsBytes, l.JSONDepth))
	}
	return errors.Join(errs...)
}

// ErrPayloadTooLarge is a host error: an event could not be sent to a
// plugin because even bounded it exceeds the largest message the wire
// carries. Since every variable-length field of the events is bounded
// this happens only for pathological fields that cannot be cut (a
// multi-megabyte file list or instruction). It falls under the plugin's
// failure policy like a plugin's own failure, so a guard with
// `failure: closed` still stops the operation.
var ErrPayloadTooLarge = errors.New("event payload exceeds the wire's maximum message size (host error)")

// MaxEventBytes is the most the bounded fields of one event (path entries,
// labels, messages) may take together, whatever a plugin's limits say:
// well under the wire's 256 MiB message limit (internal/wire checks that it
// is), leaving room for the fields that are not cut.
const MaxEventBytes = 192 << 20

// entryOverhead is what one element of a repeated field costs on the wire
// beyond its bytes, at most: a tag and a length prefix.
const entryOverhead = 6

// boundEntries keeps raw entries within max bytes (each counted with its
// wire overhead): all of them when they fit; else, when since > 0, those
// from index since on (the entries after the last compaction) if they
// fit; else the newest that fit. truncated reports whether anything was
// left out; size is what the kept entries take.
func boundEntries(entries []json.RawMessage, since, max int) (kept []json.RawMessage, truncated bool, size int) {
	total := 0
	for _, e := range entries {
		total += len(e) + entryOverhead
	}
	if total <= max {
		return entries, false, total
	}
	if since > 0 && since < len(entries) {
		tail := 0
		for _, e := range entries[since:] {
			tail += len(e) + entryOverhead
		}
		if tail <= max {
			return entries[since:], true, tail
		}
	}
	start := len(entries)
	size = 0
	for start > 0 && size+len(entries[start-1])+entryOverhead <= max {
		start--
		size += len(entries[start]) + entryOverhead
	}
	return entries[start:], true, size
}

// boundLabels keeps the newest labels within max bytes.
func boundLabels(labels []hooks.Label, max int) (kept []hooks.Label, truncated bool, size int) {
	start := len(labels)
	for start > 0 {
		l := labels[start-1]
		n := len(l.EntryID) + len(l.Label) + 3*entryOverhead
		if size+n > max {
			break
		}
		size += n
		start--
	}
	return labels[start:], start > 0, size
}

// eventBudgets returns one plugin's budgets for path entries (and labels)
// and for messages, clamped so that together they stay within
// MaxEventBytes.
func eventBudgets(l hooks.Limits) (path, messages int) {
	l = LimitsOrDefaults(l)
	path = min(l.PathEntriesBytes, MaxEventBytes/2)
	messages = min(l.MessagesBytes, MaxEventBytes-path)
	return path, messages
}

// boundMessages cuts the preparation's messages (to summarize, then the
// turn prefix: oldest first) to the newest that fit max, recording the
// totals.
func boundMessages(p *hooks.Preparation, max int) {
	if p.MessagesTotal == 0 {
		p.MessagesTotal = len(p.MessagesToSummarize)
	}
	if p.TurnPrefixTotal == 0 {
		p.TurnPrefixTotal = len(p.TurnPrefixMessages)
	}
	prefix, cutPrefix, used := boundEntries(p.TurnPrefixMessages, -1, max)
	var cutMsgs bool
	msgs := p.MessagesToSummarize
	if cutPrefix {
		msgs, cutMsgs = msgs[len(msgs):], len(msgs) > 0
	} else {
		msgs, cutMsgs, _ = boundEntries(msgs, -1, max-used)
	}
	p.TurnPrefixMessages, p.MessagesToSummarize = prefix, msgs
	p.MessagesTruncated = p.MessagesTruncated || cutPrefix || cutMsgs
}

// BoundBeforeCompact returns the session_before_compact payload the
// Dispatcher sends a plugin with limits l, cut to its budgets: labels and
// path entries share pathEntriesBytes (the newest labels first), messages
// get messagesBytes.
func BoundBeforeCompact(ev hooks.BeforeCompactEvent, l hooks.Limits) *hooks.BeforeCompactEvent {
	pathMax, msgMax := eventBudgets(l)
	var cutLabels, cutPath bool
	var used int
	ev.Labels, cutLabels, used = boundLabels(ev.Labels, pathMax)
	ev.PathEntries, cutPath, _ = boundEntries(ev.PathEntries, ev.PathSinceCompaction, pathMax-used)
	ev.LabelsTruncated = ev.LabelsTruncated || cutLabels
	ev.PathTruncated = ev.PathTruncated || cutLabels || cutPath
	boundMessages(&ev.Preparation, msgMax)
	return &ev
}

// boundBeforeTree cuts a session_before_tree payload to one plugin's
// pathEntriesBytes, keeping the newest entries.
func boundBeforeTree(ev hooks.BeforeTreeEvent, l hooks.Limits) *hooks.BeforeTreeEvent {
	if ev.EntriesTotal == 0 {
		ev.EntriesTotal = len(ev.EntriesToSummarize)
	}
	pathMax, _ := eventBudgets(l)
	var cut bool
	ev.EntriesToSummarize, cut, _ = boundEntries(ev.EntriesToSummarize, -1, pathMax)
	ev.EntriesTruncated = ev.EntriesTruncated || cut
	return &ev
}
