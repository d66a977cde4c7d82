package builtin

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/pith-dev/pith/core/summary"
	"github.com/pith-dev/pith/core/tokens"
)

// The built-in summarizer works in three steps, each in its own file:
//
//   - events.go / prompt.go: the source (a Transcript's
//     messages, or the serialized conversation of a prompt) becomes events;
//   - analyze.go: one pass over the events gathers facts (requests,
//     rules, file operations, commands, errors and whether something fixed
//     them later, decisions, results, where the last turn stopped), and
//     merge.go reads earlier summaries back into the same facts;
//   - builtin.go: the facts, each with a value, are laid out in the sections
//     the purpose asks for and trimmed, least valuable first, to the cap.
//
// Everything is ordered by position in the transcript, never by map
// iteration, so the same request always gives the same bytes.

// Model is the name the built-in summarizer reports in Result.Model
// unless Options.Name says otherwise.
const Model = "builtin"

// Options configures the built-in summarizer.
type Options struct {
	// Name is reported as Result.Model; default Model.
	Name string
}

type summarizer struct {
	name string
}

// New returns the built-in summarizer: extractive and deterministic
// (the same request gives the same bytes), with no network and no model.
// It reads the structured Transcript in Request.Source; without one it
// parses the serialized conversation out of Request.Prompt, and failing
// that returns a short extract of the prompt. The output is laid out by
// Request.Purpose with the sections of docs/behaviour.md §7 and stays within
// Request.MaxTokens (estimated as UTF-16 units / 4), dropping the least
// valuable facts first and never cutting a line. It is safe for concurrent
// use.
func New(opts Options) summary.Summarizer {
	name := opts.Name
	if name == "" {
		name = Model
	}
	return &summarizer{name: name}
}

func (b *summarizer) Summarize(ctx context.Context, req summary.Request) (summary.Result, error) {
	if err := ctx.Err(); err != nil {
		return summary.Result{}, fmt.Errorf("builtin summarizer: %w", err)
	}
	limit := 0 // in UTF-16 units; 0: no cap
	if req.MaxTokens > 0 {
		limit = req.MaxTokens * 4
	}
	src, input, err := sourceOf(ctx, req)
	if err != nil {
		return summary.Result{}, fmt.Errorf("builtin summarizer: %w", err)
	}
	var text string
	fits := true
	if src == nil {
		text, fits = promptDigest(req.Prompt, limit)
	} else {
		d, err := analyze(ctx, src)
		if err != nil {
			return summary.Result{}, fmt.Errorf("builtin summarizer: %w", err)
		}
		switch req.Purpose {
		case summary.PurposeShort:
			text, fits = shortSummary(d, limit)
		case summary.PurposeTurnPrefix:
			text, fits, err = fitLayout(ctx, turnPrefixLayout, d.items(src, false), limit)
		case summary.PurposeBranch:
			text, fits, err = fitLayout(ctx, historyLayout, d.items(src, true), limit)
		default: // history, completion, or a purpose this version does not know
			text, fits, err = fitLayout(ctx, historyLayout, d.items(src, false), limit)
		}
		if err != nil {
			return summary.Result{}, fmt.Errorf("builtin summarizer: %w", err)
		}
	}
	finish := summary.FinishStop
	if !fits {
		// Even the bare section skeleton is over the cap: what is left is
		// cut, and must be reported as such so it is not saved.
		finish = summary.FinishLength
	}
	return summary.Result{
		Text:         text,
		FinishReason: finish,
		Usage:        summary.Usage{Input: input, Output: unitsToTokens(tokens.Units(text))},
		Model:        b.name,
	}, nil
}

func unitsToTokens(units int) int { return (units + 3) / 4 }

// sourceOf picks the material: the Transcript when there is one, else what
// the prompt holds. A nil source means the prompt holds no conversation
// and no previous summary. input is the estimated size of what was read.
func sourceOf(ctx context.Context, req summary.Request) (*source, int, error) {
	var tr *summary.Transcript
	switch s := req.Source.(type) {
	case *summary.Transcript:
		tr = s
	case summary.Transcript:
		tr = &s
	}
	if tr != nil {
		events, err := eventsFromMessages(ctx, tr.Messages)
		if err != nil {
			return nil, 0, err
		}
		input := 0
		for _, m := range tr.Messages {
			input += tokens.Estimate(m.Raw)
		}
		src := &source{
			events:       events,
			contextLines: tr.ContextLines,
			instructions: tr.Instructions,
			readFiles:    tr.ReadFiles,
			modified:     tr.ModifiedFiles,
		}
		if strings.TrimSpace(tr.PreviousSummary) != "" {
			src.previous = []string{tr.PreviousSummary}
			input += unitsToTokens(tokens.Units(tr.PreviousSummary))
		}
		return src, input, nil
	}
	input := unitsToTokens(tokens.Units(req.Prompt))
	ps := parsePrompt(req.Prompt)
	if !ps.hasConversation && strings.TrimSpace(ps.previous) == "" {
		return nil, input, nil
	}
	src := &source{events: ps.events, contextLines: ps.contextLines, instructions: ps.instructions}
	if strings.TrimSpace(ps.previous) != "" {
		src.previous = []string{ps.previous}
	}
	return src, input, nil
}

// layoutSection is one section of an output layout: its heading line(s),
// the buckets it shows (in this order) and the list marker of each.
type layoutSection struct {
	header   string
	buckets  []bucket
	markers  map[bucket]string // default "- "
	numbered bool              // "1. ", "2. " … instead of a marker
}

// historyLayout is docs/behaviour.md §7's summary; branch summaries use it too.
var historyLayout = []layoutSection{
	{header: "## Goal", buckets: []bucket{bGoal}},
	{header: "## Constraints & Preferences", buckets: []bucket{bConstraints}},
	{header: "## Progress\n### Done", buckets: []bucket{bDone}, markers: map[bucket]string{bDone: "- [x] "}},
	{header: "### In Progress", buckets: []bucket{bInProgress}, markers: map[bucket]string{bInProgress: "- [ ] "}},
	{header: "### Blocked", buckets: []bucket{bBlocked}},
	{header: "## Key Decisions", buckets: []bucket{bDecisions}},
	{header: "## Next Steps", buckets: []bucket{bNext}, numbered: true},
	{header: "## Critical Context", buckets: []bucket{bCritical}},
}

// turnPrefixLayout is the summary of the early part of a split turn.
var turnPrefixLayout = []layoutSection{
	{header: "## Original Request", buckets: []bucket{bGoal}},
	{header: "## Early Progress", buckets: []bucket{bDone, bInProgress, bBlocked},
		markers: map[bucket]string{bDone: "- [x] ", bInProgress: "- [ ] ", bBlocked: "- Blocked: "}},
	{header: "## Context for Suffix", buckets: []bucket{bConstraints, bDecisions, bNext, bCritical},
		markers: map[bucket]string{bDecisions: "- Decision: ", bNext: "- Next: "}},
}

const emptySection = "(none)"

// placed is an item assigned to a section of a layout.
type placed struct {
	item
	section int
	rank    int // position of its bucket in the section
	idx     int // position in the input, the last tie-breaker
	kept    bool
}

// fitLayout renders the items in the layout within limit UTF-16 units
// (0: no limit). Over the limit it drops items lowest prio first (older
// first at equal prio) — whole lines, never part of one. fits is false
// when even the empty skeleton is over the limit; the text is then cut
// at a line boundary.
func fitLayout(ctx context.Context, layout []layoutSection, items []item, limit int) (string, bool, error) {
	ps := make([]*placed, 0, len(items))
	for i, it := range items {
		for si, sec := range layout {
			if r := indexOf(sec.buckets, it.bucket); r >= 0 {
				ps = append(ps, &placed{item: it, section: si, rank: r, idx: i, kept: true})
				break
			}
		}
	}
	sort.SliceStable(ps, func(i, j int) bool {
		a, b := ps[i], ps[j]
		if a.section != b.section {
			return a.section < b.section
		}
		if a.rank != b.rank {
			return a.rank < b.rank
		}
		if a.group != b.group {
			return a.group < b.group
		}
		if a.seq != b.seq {
			return a.seq < b.seq
		}
		return a.idx < b.idx
	})
	text := renderLayout(layout, ps)
	total := tokens.Units(text)
	if limit <= 0 || total <= limit {
		return text, true, nil
	}

	// Far over the cap, shorter quotes keep more facts than whole ones
	// would: clip the long single-line items before dropping any. Verbatim
	// items (plugin context, the open question) are never clipped.
	for _, width := range []int{160, 100} {
		if total <= 2*limit {
			break
		}
		for _, p := range ps {
			if p.prio < prioMust && !p.exact && !strings.Contains(p.text, "\n") && tokens.Units(p.text) > width {
				p.text = clip(p.text, width)
			}
		}
		total = tokens.Units(renderLayout(layout, ps))
	}

	drop := append([]*placed(nil), ps...)
	sort.SliceStable(drop, func(i, j int) bool {
		a, b := drop[i], drop[j]
		if a.prio != b.prio {
			return a.prio < b.prio
		}
		if a.seq != b.seq {
			return a.seq < b.seq
		}
		return a.idx > b.idx
	})
	perSection := make([]int, len(layout))
	for _, p := range ps {
		perSection[p.section]++
	}
	// Drop by running count first: one render per item would be quadratic
	// on a long transcript. The count is exact but for list numbers, which
	// the render loop below settles.
	n := 0
	for ; n < len(drop) && total > limit; n++ {
		if n%ctxCheckEvery == 0 {
			if err := ctx.Err(); err != nil {
				return "", false, err
			}
		}
		p := drop[n]
		p.kept = false
		total -= tokens.Units(markerOf(layout[p.section], p.bucket, 1)+p.text) + 1
		if perSection[p.section]--; perSection[p.section] == 0 {
			total += tokens.Units(emptySection) + 1
		}
	}
	for {
		text = renderLayout(layout, ps)
		if tokens.Units(text) <= limit {
			return text, true, nil
		}
		if n >= len(drop) {
			return cutLines(text, limit), false, nil
		}
		drop[n].kept = false
		n++
	}
}

func indexOf(bs []bucket, b bucket) int {
	for i, x := range bs {
		if x == b {
			return i
		}
	}
	return -1
}

func markerOf(sec layoutSection, b bucket, n int) string {
	if sec.numbered {
		return fmt.Sprintf("%d. ", n)
	}
	if m, ok := sec.markers[b]; ok {
		return m
	}
	return "- "
}

func renderLayout(layout []layoutSection, ps []*placed) string {
	var b strings.Builder
	i := 0
	for si, sec := range layout {
		if si > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(sec.header)
		n := 0
		for ; i < len(ps) && ps[i].section == si; i++ {
			if !ps[i].kept {
				continue
			}
			n++
			b.WriteByte('\n')
			b.WriteString(markerOf(sec, ps[i].bucket, n))
			b.WriteString(ps[i].text)
		}
		if n == 0 {
			b.WriteString("\n" + emptySection)
		}
	}
	return b.String()
}

// cutLines keeps the whole lines of text that fit in limit units.
func cutLines(text string, limit int) string {
	used := 0
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		n := tokens.Units(l)
		if i > 0 {
			n++
		}
		if used+n > limit {
			return strings.Join(lines[:i], "\n")
		}
		used += n
	}
	return text
}

// shortSummary writes the 2–3 sentence summary: the goal, what changed,
// where it stopped. It shortens the quotes, then drops the last sentence,
// to stay within limit.
func shortSummary(d *digest, limit int) (string, bool) {
	// The goal of an earlier summary names the task better than the first
	// request after it, which is often a follow-up.
	goal := ""
	for _, ps := range d.prev {
		for _, it := range ps.items {
			if it.bucket == bGoal && goal == "" {
				goal = flatten(it.text)
			}
		}
	}
	if goal == "" && d.firstReq >= 0 {
		goal = d.requests[d.firstReq].text
	}
	// One sentence of it: the short summary has three in all.
	if ss := sentences(goal); len(ss) > 0 {
		goal = ss[0]
	}
	var modified, reads []string
	for _, f := range d.files {
		switch {
		case f.modified():
			modified = append(modified, "`"+baseName(f.path)+"`")
		case !f.attempted():
			reads = append(reads, f.path)
		}
	}
	cmds := 0
	for _, c := range d.cmds {
		cmds += c.count
	}
	var blocked *errInfo
	for _, e := range d.errors {
		if !e.resolved && e.turn == d.turns {
			blocked = e
		}
	}
	build := func(width int) []string {
		var s []string
		if goal != "" {
			s = append(s, "Goal: "+sentenceEnd(clip(goal, width)))
		} else {
			s = append(s, "There was no user request in this part of the session.")
		}
		var acts []string
		if len(modified) > 0 {
			list, more := modified, ""
			if len(list) > 3 {
				list, more = list[:3], fmt.Sprintf(" and %d more", len(modified)-3)
			}
			acts = append(acts, fmt.Sprintf("modified %s (%s%s)", times(len(modified), "file"), strings.Join(list, ", "), more))
		}
		if cmds > 0 {
			acts = append(acts, "ran "+times(cmds, "command"))
		}
		if len(reads) > 0 {
			acts = append(acts, "read "+times(len(reads), "file"))
		}
		last := lastFacts(d.conclusions, 1)
		if len(acts) > 0 {
			s = append(s, "The assistant "+joinAnd(acts)+".")
		} else if len(last) > 0 {
			s = append(s, "The assistant reported: "+sentenceEnd(clip(last[0].text, width)))
		}
		switch {
		case d.question != "":
			s = append(s, "It ended waiting for the user's answer to: "+sentenceEnd(clip(lastQuestion(d.question), width)))
		case blocked != nil:
			s = append(s, "It is blocked by "+blocked.where+": "+sentenceEnd(clip(blocked.text, width)))
		case d.unfinished && d.lastIntent != "":
			s = append(s, "It stopped while working: "+sentenceEnd(clip(d.lastIntent, width)))
		case d.unfinished && d.lastUserText != "":
			s = append(s, "It stopped before finishing: "+sentenceEnd(clip(d.lastUserText, width)))
		case len(last) > 0 && len(acts) > 0:
			s = append(s, "Last result: "+sentenceEnd(clip(last[0].text, width)))
		}
		return s
	}
	fits := func(s []string) bool { return limit <= 0 || tokens.Units(strings.Join(s, " ")) <= limit }
	var s []string
	for _, width := range []int{200, 120, 60, 30} {
		s = build(width)
		for k := len(s); k >= min(2, len(s)); k-- {
			if fits(s[:k]) {
				return strings.Join(s[:k], " "), true
			}
		}
	}
	// Last resort: the goal alone, at the narrowest quote.
	if fits(s[:1]) {
		return s[0], true
	}
	return "", false
}

// baseName is the last element of a slash or backslash separated path:
// the short summary names files, the long one keeps their paths.
func baseName(p string) string {
	if i := strings.LastIndexAny(strings.TrimRight(p, "/\\"), "/\\"); i >= 0 {
		return strings.TrimRight(p[i+1:], "/\\")
	}
	return p
}

// lastQuestion is the last sentence of text that asks something.
func lastQuestion(text string) string {
	ss := sentences(text)
	for i := len(ss) - 1; i >= 0; i-- {
		if isQuestion(ss[i]) {
			return flatten(ss[i])
		}
	}
	return flatten(text)
}

func sentenceEnd(s string) string {
	s = strings.TrimSpace(s)
	if s == "" || strings.HasSuffix(s, "…") || strings.ContainsAny(s[len(s)-1:], ".!?") {
		return s
	}
	return s + "."
}

func joinAnd(parts []string) string {
	switch len(parts) {
	case 0:
		return ""
	case 1:
		return parts[0]
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

// maxDigestPoints bounds the extract of a prompt that holds no
// conversation.
const maxDigestPoints = 10

// promptDigest extracts a prompt that is not a conversation: the first
// sentence of each paragraph, as a list, within limit.
func promptDigest(prompt string, limit int) (string, bool) {
	var points []string
	for _, para := range strings.Split(strings.ReplaceAll(prompt, "\r\n", "\n"), "\n\n") {
		ss := sentences(para)
		if len(ss) == 0 {
			continue
		}
		points = append(points, "- "+clip(flatten(ss[0]), clipSentence))
		if len(points) == maxDigestPoints {
			break
		}
	}
	if len(points) == 0 {
		return "(empty prompt)", limit <= 0 || limit >= tokens.Units("(empty prompt)")
	}
	for k := len(points); k >= 1; k-- {
		text := strings.Join(points[:k], "\n")
		if limit <= 0 || tokens.Units(text) <= limit {
			return text, true
		}
	}
	return "", false
}
