package builtin

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/pith-dev/pith/core/tokens"
)

// item is one fact of a summary. prio says how much it is worth keeping
// when the output cap forces trimming (lowest goes first, older before
// newer at equal prio); group and seq order the items inside a section.
type item struct {
	bucket bucket
	text   string
	prio   int
	group  int
	seq    int
	// exact marks a fact that must not be shortened to fit (it quotes
	// paths); it can only be dropped whole.
	exact bool
}

// Priorities, highest kept longest. Context lines from plugins and an
// unanswered question must survive; raw activity logs go first.
const (
	prioMust        = 100
	prioFocus       = 95
	prioFirstGoal   = 92
	prioBlocked     = 90
	prioLastGoal    = 86
	prioInProgress  = 84
	prioNext        = 82
	prioModified    = 80
	prioConstraint  = 76
	prioModifiedRef = 75 // the path list of Critical Context repeats Done's
	prioDecision    = 72
	prioConclusion  = 70
	prioLastError   = 62
	prioRead        = 60
	prioFiller      = 58 // lines derived from others ("resolve the error above")
	prioIdent       = 54
	prioGoal        = 50
	prioCommand     = 46
	prioNote        = 44
	prioTool        = 42
	prioStale       = 30
)

// prevPrio ranks the facts of an earlier summary: the standing ones (goal,
// rules, decisions) above the new activity log, the time-bound ones (what
// was in progress, blocked or next then) below everything new.
var prevPrio = map[bucket]int{
	bGoal:        78,
	bConstraints: 77,
	bDecisions:   73,
	bCritical:    72,
	bDone:        71,
	bInProgress:  prioStale,
	bBlocked:     prioStale,
	bNext:        prioStale,
}

// Limits keep the summary a summary rather than a log, even when the cap
// would allow more.
const (
	maxGoals       = 10
	maxConstraints = 20
	maxDecisions   = 15
	maxConclusions = 25
	maxCommands    = 15
	maxIdents      = 40
	identsPerLine  = 8
	maxNext        = 8
	maxErrors      = 3
	maxNotes       = 10

	clipRequest  = 300
	clipSentence = 240
	clipError    = 400
	clipCommand  = 120
	clipQuestion = 1500

	shortErrorLine = 60 // units; an error line this short gets its next line too
)

// source is everything a summary is made from, whichever way it arrived.
type source struct {
	events       []event
	previous     []string // earlier summaries, oldest first
	contextLines []string
	instructions string
	readFiles    []string
	modified     []string
}

// fileInfo is what happened to one path.
type fileInfo struct {
	path string
	// reads, edits and writes count calls, as the file lists of docs/behaviour.md §5.8
	// do.
	reads, edits, writes int
	// editsOK and writesOK count the calls that succeeded: what Done
	// reports.
	editsOK, writesOK int
	// listed: a file list (the Transcript's, an earlier summary's) says the
	// file was modified, in work this transcript no longer shows.
	listed      bool
	first, last int
}

// modified reports whether the file was changed, as far as is known.
func (f *fileInfo) modified() bool { return f.editsOK+f.writesOK > 0 || f.listed }

// attempted reports a file that change calls targeted without success.
func (f *fileInfo) attempted() bool { return !f.modified() && f.edits+f.writes > 0 }

type cmdInfo struct {
	text   string
	user   bool // run directly by the user (bashExecution)
	count  int
	status string
	last   int
}

type toolInfo struct {
	name   string
	count  int
	target string
	last   int
}

type errInfo struct {
	where    string
	text     string
	key      string
	seq      int
	turn     int
	resolved bool
	// workedAfter: a tool call or command succeeded after the error.
	workedAfter bool
}

type request struct {
	text string
	seq  int
}

type sentenceFact struct {
	text string
	seq  int
}

type identInfo struct {
	name  string
	count int
	first int
}

// digest is the analysis of a source: facts by kind, in chronological
// order, plus what the last turn left open.
type digest struct {
	files      []*fileInfo
	fileIdx    map[string]*fileInfo
	cmds       []*cmdInfo
	cmdIdx     map[string]*cmdInfo
	tools      []*toolInfo
	toolIdx    map[string]*toolInfo
	inspects   []*toolInfo
	inspectIdx map[string]*toolInfo
	errors     []*errInfo
	requests   []request
	firstReq   int // index into requests of the first substantive one, -1 when none

	constraints []sentenceFact
	decisions   []sentenceFact
	conclusions []sentenceFact
	idents      map[string]*identInfo
	notes       []sentenceFact
	prev        []prevSummary

	lastUser      int    // event index of the last user message, -1 when none
	lastUserText  string // its text, flattened and clipped
	turns         int    // user messages seen
	unfinished    bool   // the last turn did not end with a final answer
	lastEventUser bool   // the transcript ends on a user message
	lastIntent    string // what the assistant said it was doing last
	lastTool      string // the last tool call still without a result
	aborted       bool
	question      string // an unanswered question to the user, verbatim
	nextLines     []string
}

func newDigest() *digest {
	return &digest{
		fileIdx:    map[string]*fileInfo{},
		cmdIdx:     map[string]*cmdInfo{},
		toolIdx:    map[string]*toolInfo{},
		inspectIdx: map[string]*toolInfo{},
		idents:     map[string]*identInfo{},
		firstReq:   -1,
		lastUser:   -1,
	}
}

// pendingCall is a tool call waiting for its result.
type pendingCall struct {
	call toolCall
	seq  int
}

// analyze walks the events once, in order.
func analyze(ctx context.Context, src *source) (*digest, error) {
	d := newDigest()
	for _, p := range src.previous {
		d.prev = append(d.prev, parsePrevSummary(p))
	}
	pending := map[string]pendingCall{}
	var pendingOrder []string
	lastAsstText := -1
	for i := range src.events {
		if i%ctxCheckEvery == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		ev := &src.events[i]
		seq := i + 1
		switch ev.kind {
		case evUser:
			d.lastUser = i
			d.lastUserText = clip(flatten(stripCode(ev.text)), clipRequest)
			d.turns++
			d.addUser(ev.text, seq)
		case evAssistant:
			if ev.text != "" {
				lastAsstText = i
				d.addAssistantText(ev.text, seq, len(ev.calls) == 0)
			}
			for _, c := range ev.calls {
				d.noteCall(c, seq)
				if c.id != "" {
					pending[c.id] = pendingCall{call: c, seq: seq}
					pendingOrder = append(pendingOrder, c.id)
				}
			}
			switch {
			case ev.stop == "error" || ev.errMsg != "":
				msg := ev.errMsg
				if msg == "" {
					msg = "the model request failed"
				}
				d.addError("model response", msg, "assistant", seq)
			case ev.stop == "aborted":
				// An abort is the user's choice, not an error to fix.
			default:
				d.resolve("assistant")
			}
		case evToolResult:
			pc, ok := pending[ev.callID]
			if ok {
				delete(pending, ev.callID)
			} else {
				pc = pendingCall{call: toolCall{name: ev.toolName}, seq: seq}
			}
			d.noteResult(pc.call, ev, seq)
		case evBash:
			d.noteBash(ev, seq)
		case evCustom:
			if t := flatten(ev.text); t != "" {
				label := "Context note"
				if ev.label != "" {
					label = "Context note (" + ev.label + ")"
				}
				d.notes = append(d.notes, sentenceFact{text: label + ": " + clip(t, clipSentence), seq: seq})
			}
		case evSummary:
			d.prev = append(d.prev, parsePrevSummary(ev.text))
		case evBranchSummary:
			ps := parsePrevSummary(ev.text)
			what := ""
			for _, it := range ps.items {
				if it.bucket == bGoal {
					what = ": " + clip(flatten(it.text), clipSentence)
					break
				}
			}
			d.notes = append(d.notes, sentenceFact{text: "Came back from an abandoned branch" + what, seq: seq})
			for _, p := range ps.read {
				d.file(p, seq).reads++
			}
			for _, p := range ps.modified {
				d.file(p, seq).listed = true
			}
		}
	}
	for _, p := range src.readFiles {
		d.file(p, 0)
	}
	for _, p := range src.modified {
		d.file(p, 0).listed = true
	}
	for _, ps := range d.prev {
		for _, p := range ps.read {
			d.file(p, 0)
		}
		for _, p := range ps.modified {
			d.file(p, 0).listed = true
		}
	}
	d.finishLastTurn(src.events, lastAsstText, pending, pendingOrder)
	return d, nil
}

func (d *digest) file(path string, seq int) *fileInfo {
	f := d.fileIdx[path]
	if f == nil {
		f = &fileInfo{path: path, first: seq}
		d.fileIdx[path] = f
		d.files = append(d.files, f)
	}
	if seq > f.last {
		f.last = seq
	}
	return f
}

func (d *digest) addUser(text string, seq int) {
	d.addIdents(text, seq)
	flat := flatten(stripCode(text))
	if flat == "" {
		return
	}
	if !acknowledgement().MatchString(flat) && (wordCount(flat) >= 4 || wordCount(flat) >= 2 && strings.ContainsAny(flat, "`/@")) {
		if d.firstReq < 0 {
			d.firstReq = len(d.requests)
		}
		d.requests = append(d.requests, request{text: clip(flat, clipRequest), seq: seq})
	}
	for _, s := range sentences(text) {
		if constraintMarker.MatchString(s) && !isQuestion(s) && wordCount(s) >= 3 {
			d.constraints = append(d.constraints, sentenceFact{text: clip(flatten(s), clipSentence), seq: seq})
		}
	}
}

// addAssistantText takes decisions and, from a turn's final text, the
// sentences that report results.
func (d *digest) addAssistantText(text string, seq int, final bool) {
	d.addIdents(text, seq)
	ss := sentences(text)
	for _, s := range ss {
		if decisionMarker.MatchString(s) && !isQuestion(s) && !isLeadIn(s) && wordCount(s) >= 4 {
			d.decisions = append(d.decisions, sentenceFact{text: clip(flatten(s), clipSentence), seq: seq})
		}
	}
	for _, s := range ss {
		if fixMarker.MatchString(s) && !fixNegation.MatchString(s) && !speculative.MatchString(s) && !isQuestion(s) {
			// "Fixed. `ledger import` now accepts…": what failed in this
			// turn is dealt with, even if the failing command never ran
			// again.
			d.resolveTurn()
			break
		}
	}
	picked := 0
	for i, s := range ss {
		if picked == 2 {
			break
		}
		// A result is reported at the end of a turn, or opens an
		// intermediate message ("WP1 complete. Now WP2: …").
		if (final || i == 0) && resultMarker.MatchString(s) && !isQuestion(s) && !isLeadIn(s) && !interjection().MatchString(s) &&
			!speculative.MatchString(s) && wordCount(s) >= 2 {
			d.conclusions = append(d.conclusions, sentenceFact{text: clip(flatten(s), clipSentence), seq: seq})
			picked++
		}
	}
}

func (d *digest) addIdents(text string, seq int) {
	for _, m := range backtickSpan().FindAllStringSubmatch(stripCode(text), -1) {
		name := m[1]
		if !looksLikeIdentifier(name) {
			continue
		}
		in := d.idents[name]
		if in == nil {
			in = &identInfo{name: name, first: seq}
			d.idents[name] = in
		}
		in.count++
	}
}

// noteCall records what a call touches; file operations count when the
// call is made, as docs/behaviour.md §5.8 counts them.
func (d *digest) noteCall(c toolCall, seq int) {
	p := c.str("path")
	switch {
	case c.name == "read" && p != "":
		d.file(p, seq).reads++
	case c.name == "edit" && p != "":
		d.file(p, seq).edits++
	case c.name == "write" && p != "":
		d.file(p, seq).writes++
	}
}

// noteResult pairs a result with its call: command status, error or the
// success that resolves an earlier error on the same target.
func (d *digest) noteResult(c toolCall, ev *event, seq int) {
	key := errorKey(c.name, c.target(), c.str("command"))
	if c.name == "bash" || c.str("command") != "" {
		status := "ok"
		if ev.isError {
			status = "failed"
			if m := exitCodePattern().FindStringSubmatch(ev.text); m != nil {
				status = "exit " + m[1]
			}
		}
		d.command(c.str("command"), false, status, seq)
	} else if c.name != "read" && c.name != "edit" && c.name != "write" {
		d.tool(c, seq)
	}
	if ev.isError {
		d.addError(describeCall(c), ev.text, key, seq)
		return
	}
	d.resolve(key)
	d.succeeded()
	if p := c.str("path"); p != "" {
		switch c.name {
		case "edit":
			d.file(p, seq).editsOK++
		case "write":
			d.file(p, seq).writesOK++
		}
	}
}

func (d *digest) noteBash(ev *event, seq int) {
	status := "ok"
	switch {
	case ev.cancelled:
		status = "cancelled"
	case ev.exit != nil:
		status = fmt.Sprintf("exit %d", *ev.exit)
	}
	d.command(ev.command, true, status, seq)
	key := errorKey("bash", ev.command, ev.command)
	if ev.exit != nil && *ev.exit != 0 {
		d.addError("user command `"+clip(flatten(commandLine(ev.command)), clipCommand)+"`", ev.text+"\nexit code "+fmt.Sprint(*ev.exit), key, seq)
	} else if !ev.cancelled {
		d.resolve(key)
		d.succeeded()
	}
}

func (d *digest) command(cmd string, user bool, status string, seq int) {
	text := clip(flatten(commandLine(cmd)), clipCommand)
	if text == "" {
		return
	}
	if prog := inspectionProgram(text); prog != "" && !user {
		// Looking around (grep, cat, ls…) is counted, not listed.
		ii := d.inspectIdx[prog]
		if ii == nil {
			ii = &toolInfo{name: prog}
			d.inspectIdx[prog] = ii
			d.inspects = append(d.inspects, ii)
		}
		ii.count++
		ii.last = seq
		return
	}
	k := fmt.Sprint(user) + text
	ci := d.cmdIdx[k]
	if ci == nil {
		ci = &cmdInfo{text: text, user: user}
		d.cmdIdx[k] = ci
		d.cmds = append(d.cmds, ci)
	}
	ci.count++
	ci.status = status
	ci.last = seq
}

func (d *digest) tool(c toolCall, seq int) {
	ti := d.toolIdx[c.name]
	if ti == nil {
		ti = &toolInfo{name: c.name}
		d.toolIdx[c.name] = ti
		d.tools = append(d.tools, ti)
	}
	ti.count++
	ti.target = clip(flatten(firstLine(c.target())), clipCommand)
	ti.last = seq
}

// addError keeps an error's telling lines exactly: the first line, and the
// first line that names an error when that is another one.
func (d *digest) addError(where, text, key string, seq int) {
	var lines []string
	for _, l := range strings.Split(text, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	msg := ""
	if len(lines) > 0 {
		msg = lines[0]
		switch {
		case !errorLineMarker().MatchString(lines[0]):
			// The first line is context ("> npm run check"): add the
			// first line that names the error.
			for _, l := range lines[1:] {
				if errorLineMarker().MatchString(l) {
					msg += " … " + l
					break
				}
			}
		case len(lines) > 1 && tokens.Units(lines[0]) < shortErrorLine:
			// A bare "--- FAIL: TestX" says little without the line
			// after it.
			msg += " … " + lines[1]
		}
	}
	if msg == "" {
		msg = "(no output)"
	}
	d.errors = append(d.errors, &errInfo{where: where, text: clip(msg, clipError), key: key, seq: seq, turn: d.turns})
}

// resolveTurn marks resolved the errors of the current turn that some
// work succeeded after: a claim of a fix with nothing done since the
// failure is not trusted.
func (d *digest) resolveTurn() {
	for _, e := range d.errors {
		if e.turn == d.turns && e.workedAfter {
			e.resolved = true
		}
	}
}

// succeeded notes a successful tool result or command: the errors before
// it had work done after them.
func (d *digest) succeeded() {
	for _, e := range d.errors {
		e.workedAfter = true
	}
}

// errorKey says which later success resolves a call's error: the same
// tool on the same target, or the same command line (a `cd dir &&` prefix
// aside, whoever runs it: the agent or the user).
func errorKey(tool, target, command string) string {
	if command != "" {
		return "cmd\x00" + flatten(commandLine(command))
	}
	return tool + "\x00" + target
}

func (d *digest) resolve(key string) {
	for _, e := range d.errors {
		if e.key == key {
			e.resolved = true
		}
	}
}

// finishLastTurn works out where the transcript stopped: an open request,
// a call without result, an unanswered question, the stated next steps.
func (d *digest) finishLastTurn(events []event, lastAsstText int, pending map[string]pendingCall, order []string) {
	if len(events) == 0 {
		return
	}
	last := events[len(events)-1]
	d.lastEventUser = last.kind == evUser
	switch {
	case last.kind == evUser:
		d.unfinished = true
	case last.kind == evAssistant:
		d.unfinished = len(last.calls) > 0 || last.stop == "error" || last.stop == "aborted" || last.stop == "length" || last.text == ""
		d.aborted = last.stop == "aborted"
	case last.kind == evToolResult:
		d.unfinished = true
	}
	for i := len(order) - 1; i >= 0; i-- {
		if pc, ok := pending[order[i]]; ok && pc.seq > d.lastUser+1 {
			d.lastTool = describeCall(pc.call)
			break
		}
	}
	if lastAsstText < 0 {
		return
	}
	text := events[lastAsstText].text
	if lastAsstText > d.lastUser {
		if isQuestion(text) && d.lastUser < lastAsstText {
			d.question = questionText(text)
		}
		d.nextLines = nextSteps(text)
		if d.unfinished {
			if ss := sentences(text); len(ss) > 0 {
				d.lastIntent = clip(flatten(ss[len(ss)-1]), clipSentence)
			}
		}
	}
}

// questionText keeps an unanswered question verbatim: the whole text when
// it is short, else its last paragraph that holds a question mark.
func questionText(text string) string {
	text = strings.TrimSpace(text)
	if len(text) <= clipQuestion {
		return text
	}
	paras := strings.Split(text, "\n\n")
	for i := len(paras) - 1; i >= 0; i-- {
		if strings.Contains(paras[i], "?") {
			return strings.TrimSpace(paras[i])
		}
	}
	return strings.TrimSpace(paras[len(paras)-1])
}

// nextSteps finds the steps the assistant announced in its last text: the
// list under a "next steps"/"plan" line, else a numbered list, else the
// sentences that look forward.
func nextSteps(text string) []string {
	lines := strings.Split(stripCode(text), "\n")
	var out []string
	under := false
	for _, l := range lines {
		t := strings.TrimSpace(l)
		low := strings.ToLower(t)
		if !itemStart().MatchString(l) && t != "" {
			under = strings.Contains(low, "next") || strings.Contains(low, "plan") || strings.Contains(low, "todo") || strings.Contains(low, "remaining")
			continue
		}
		if under {
			if m := itemStart().FindStringSubmatch(l); m != nil && strings.TrimSpace(m[1]) != "" {
				out = append(out, clip(flatten(m[1]), clipSentence))
			}
		}
	}
	if len(out) > 0 {
		return capList(out, maxNext)
	}
	for _, l := range lines {
		if m := numberedItem().FindStringSubmatch(l); m != nil && strings.TrimSpace(m[1]) != "" {
			out = append(out, clip(flatten(m[1]), clipSentence))
		}
	}
	if len(out) > 0 {
		return capList(out, maxNext)
	}
	for _, s := range sentences(text) {
		if nextMarker.MatchString(s) && !isQuestion(s) && wordCount(s) >= 3 {
			out = append(out, clip(flatten(s), clipSentence))
		}
	}
	return capList(out, maxNext)
}

func capList(s []string, n int) []string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// items turns the digest into facts by bucket. The merge of earlier
// summaries comes first in each section (group 0) so old facts keep their
// place, with the new material after them.
func (d *digest) items(src *source, branch bool) []item {
	var out []item
	seen := map[string]bool{}
	add := func(b bucket, group, prio, seq int, text string) {
		if strings.TrimSpace(text) == "" {
			return
		}
		k := fmt.Sprint(int(b)) + "\x00" + normKey(text)
		if seen[k] {
			return
		}
		seen[k] = true
		out = append(out, item{bucket: b, text: text, prio: prio, group: group, seq: seq})
	}
	addExact := func(b bucket, group, prio, seq int, text string) {
		n := len(out)
		add(b, group, prio, seq, text)
		if len(out) > n {
			out[n].exact = true
		}
	}

	// Earlier summaries: kept, with the time-bound sections (what was in
	// progress, blocked or next then) ranked below the new ones.
	for _, ps := range d.prev {
		for _, it := range ps.items {
			add(it.bucket, 0, prevPrio[it.bucket], 0, it.text)
		}
	}

	// Goal.
	if src.instructions != "" {
		add(bGoal, 2, prioFocus, 1<<30, "Additional focus: "+flatten(src.instructions))
	}
	if d.firstReq >= 0 {
		reqs := d.requests[d.firstReq:]
		first := reqs[0]
		add(bGoal, 1, prioFirstGoal, first.seq, first.text)
		rest := reqs[1:]
		if len(rest) > maxGoals {
			rest = rest[len(rest)-maxGoals:]
		}
		for i, r := range rest {
			prio := prioGoal
			if i == len(rest)-1 {
				prio = prioLastGoal
			}
			add(bGoal, 1, prio, r.seq, r.text)
		}
	}

	// Constraints & Preferences: plugin context lines verbatim, then the
	// user's own rules.
	for i, l := range src.contextLines {
		add(bConstraints, 1, prioMust, i, l)
	}
	for _, c := range lastFacts(d.constraints, maxConstraints) {
		add(bConstraints, 2, prioConstraint, c.seq, c.text)
	}

	// Done: conclusions, then files changed, commands, other tools, reads.
	for _, c := range lastFacts(d.conclusions, maxConclusions) {
		add(bDone, 1, prioConclusion, c.seq, c.text)
	}
	reads := 0
	for _, f := range d.files {
		switch {
		case f.writesOK > 0 && f.editsOK > 0:
			addExact(bDone, 2, prioModified, f.last, fmt.Sprintf("Wrote and edited `%s` (%s)", f.path, times(f.writesOK+f.editsOK, "change")))
		case f.writesOK > 0:
			addExact(bDone, 2, prioModified, f.last, fmt.Sprintf("Wrote `%s`", f.path))
		case f.editsOK > 0:
			addExact(bDone, 2, prioModified, f.last, fmt.Sprintf("Edited `%s` (%s)", f.path, times(f.editsOK, "edit")))
		case f.listed:
			addExact(bDone, 2, prioModified, f.last, fmt.Sprintf("Modified `%s`", f.path))
		case !f.attempted():
			reads++
		}
	}
	cmds := append([]*cmdInfo(nil), d.cmds...)
	sort.SliceStable(cmds, func(i, j int) bool { return cmds[i].last < cmds[j].last })
	if len(cmds) > maxCommands {
		out = append(out, item{bucket: bDone, group: 3, prio: prioCommand, seq: 0,
			text: fmt.Sprintf("Ran %d other commands earlier", len(cmds)-maxCommands)})
		cmds = cmds[len(cmds)-maxCommands:]
	}
	for _, c := range cmds {
		who := "Ran"
		if c.user {
			who = "User ran"
		}
		add(bDone, 3, prioCommand, c.last, fmt.Sprintf("%s `%s`%s (%s)", who, c.text, timesSuffix(c.count), lastStatus(c)))
	}
	if len(d.inspects) > 0 {
		total, last := 0, 0
		parts := make([]string, 0, len(d.inspects))
		for _, in := range d.inspects {
			total += in.count
			last = max(last, in.last)
			parts = append(parts, "`"+in.name+"`"+timesSuffix(in.count))
		}
		add(bDone, 4, prioTool, last, fmt.Sprintf("Inspected the code and files with %s (%s)", strings.Join(parts, ", "), times(total, "command")))
	}
	for _, t := range d.tools {
		text := fmt.Sprintf("Used `%s`%s", t.name, timesSuffix(t.count))
		if t.target != "" {
			text += fmt.Sprintf(" (last on `%s`)", t.target)
		}
		add(bDone, 4, prioTool, t.last, text)
	}
	if reads > 0 {
		add(bDone, 5, prioTool, 0, fmt.Sprintf("Read %s (paths under Critical Context)", times(reads, "file")))
	}
	for _, n := range lastFacts(d.notes, maxNotes) {
		add(bDone, 6, prioNote, n.seq, n.text)
	}

	// In Progress.
	if d.unfinished && d.lastUserText != "" {
		add(bInProgress, 1, prioInProgress, d.lastUser+1, d.lastUserText)
	}
	if d.lastTool != "" {
		add(bInProgress, 2, prioInProgress, 1<<29, "Was waiting for the result of "+d.lastTool)
	}
	if d.lastIntent != "" {
		add(bInProgress, 2, prioInProgress, 1<<29, "Last step: "+d.lastIntent)
	}
	if d.aborted {
		add(bInProgress, 3, prioInProgress, 1<<29, "The last response was aborted before it finished")
	}
	if d.question != "" {
		add(bInProgress, 3, prioFiller, 1<<29, "Waiting for the user's answer to the open question (see Critical Context)")
	}
	if branch && !d.unfinished && d.question == "" {
		if c := lastFacts(d.conclusions, 1); len(c) > 0 {
			add(bInProgress, 3, prioInProgress, 1<<29, "Stopped after: "+c[0].text)
		}
	}

	// Blocked: errors of the last turn nothing fixed since.
	var blocked, earlier []*errInfo
	for _, e := range d.errors {
		if !e.resolved && e.turn == d.turns {
			blocked = append(blocked, e)
		} else {
			earlier = append(earlier, e)
		}
	}
	for _, e := range lastErrs(blocked, maxErrors) {
		add(bBlocked, 1, prioBlocked, e.seq, fmt.Sprintf("%s: %s", e.where, e.text))
	}

	// Key Decisions.
	for _, c := range lastFacts(d.decisions, maxDecisions) {
		add(bDecisions, 1, prioDecision, c.seq, c.text)
	}

	// Next Steps.
	if d.lastEventUser && d.lastUserText != "" {
		add(bNext, 1, prioNext, 1<<30, "Respond to the user's latest message: "+d.lastUserText)
	}
	if d.question != "" {
		add(bNext, 1, prioFiller, 1<<30, "Get the user's answer to the open question, then continue")
	}
	for i, s := range d.nextLines {
		add(bNext, 2, prioNext, 1<<29+i, s)
	}
	if len(blocked) > 0 {
		add(bNext, 3, prioFiller, 1<<28, "Resolve the blocking error above")
	}

	// Critical Context.
	if d.question != "" {
		add(bCritical, 1, prioMust, 1<<30, renderQuestion(d.question))
	}
	for _, e := range lastErrs(earlier, maxErrors) {
		state := "resolved later"
		if !e.resolved {
			state = "unresolved"
		}
		add(bCritical, 2, prioLastError, e.seq, fmt.Sprintf("Earlier error (%s) from %s: %s", state, e.where, e.text))
	}
	for _, f := range d.files {
		if f.modified() {
			addExact(bCritical, 3, prioModifiedRef, f.last, fmt.Sprintf("Modified: `%s`", f.path))
		}
	}
	for _, f := range d.files {
		switch {
		case f.modified():
		case f.attempted():
			addExact(bCritical, 4, prioRead, f.last, fmt.Sprintf("Tried to change, without success: `%s`", f.path))
		default:
			addExact(bCritical, 4, prioRead, f.last, fmt.Sprintf("Read: `%s`", f.path))
		}
	}
	for i, line := range identLines(d.idents) {
		add(bCritical, 5, prioIdent-i, 0, line)
	}
	return out
}

func lastFacts(f []sentenceFact, n int) []sentenceFact {
	// Later mentions of the same fact do not add a line.
	seen := map[string]bool{}
	var out []sentenceFact
	for i := len(f) - 1; i >= 0 && len(out) < n; i-- {
		k := normKey(f[i].text)
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, f[i])
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

func lastErrs(e []*errInfo, n int) []*errInfo {
	if len(e) > n {
		return e[len(e)-n:]
	}
	return e
}

func times(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func timesSuffix(n int) string {
	if n <= 1 {
		return ""
	}
	return fmt.Sprintf(" ×%d", n)
}

func lastStatus(c *cmdInfo) string {
	if c.count > 1 {
		return "last: " + c.status
	}
	return c.status
}

// renderQuestion quotes the question exactly: inline when it is one line,
// else in a fence long enough not to clash with backticks inside it.
func renderQuestion(q string) string {
	if !strings.Contains(q, "\n") && !strings.Contains(q, "```") {
		return "Unanswered question to the user (verbatim): " + q
	}
	fence := "```"
	for strings.Contains(q, fence) {
		fence += "`"
	}
	return "Unanswered question to the user (verbatim):\n" + fence + "text\n" + q + "\n" + fence
}

// identLines lists the most mentioned identifiers, most mentioned first,
// identsPerLine to a line so trimming drops the rarest first.
func identLines(idents map[string]*identInfo) []string {
	list := make([]*identInfo, 0, len(idents))
	for _, in := range idents {
		list = append(list, in)
	}
	sort.Slice(list, func(i, j int) bool {
		if list[i].count != list[j].count {
			return list[i].count > list[j].count
		}
		if list[i].first != list[j].first {
			return list[i].first < list[j].first
		}
		return list[i].name < list[j].name
	})
	if len(list) > maxIdents {
		list = list[:maxIdents]
	}
	var lines []string
	for i := 0; i < len(list); i += identsPerLine {
		end := min(i+identsPerLine, len(list))
		names := make([]string, 0, end-i)
		for _, in := range list[i:end] {
			names = append(names, "`"+in.name+"`")
		}
		label := "Identifiers"
		if i > 0 {
			label = "More identifiers"
		}
		lines = append(lines, label+": "+strings.Join(names, ", "))
	}
	return lines
}
