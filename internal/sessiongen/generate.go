package sessiongen

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"time"
)

// kind classifies an entry on the current path for later decisions
// (re-parenting, firstKeptEntryId choice).
type kind uint8

const (
	kUser kind = iota
	kAssistant
	kToolResult
	kMeta
	kCompaction
	kOther
)

type pathEntry struct {
	id      string
	kind    kind
	turnEnd bool // a place a new turn may branch from
	keep    int  // compactions: path index of their first kept entry
}

type generator struct {
	r      *rand.Rand
	o      Options
	w      *bufio.Writer
	c      *corpus
	o2     obj // reusable line builder
	ids    map[uint32]struct{}
	path   []pathEntry
	n      int // entries written
	now    time.Time
	ctx    int // rough context size in tokens, for realistic usage numbers
	calls  int
	model  int
	werr   error
	keepAt int // path index of the last compaction's first kept entry (-1: none)
}

var models = []struct{ api, provider, id string }{
	{"anthropic-messages", "anthropic", "claude-sonnet-4-5"},
	{"anthropic-messages", "anthropic", "claude-opus-4-5"},
	{"openai-responses", "openai", "gpt-5.1-codex"},
	{"google-generative-ai", "google", "gemini-2.5-pro"},
}

var thinkingLevels = []string{"off", "minimal", "low", "medium", "high", "xhigh"}

// GenerateFile writes a session to path (created or truncated).
func GenerateFile(path string, opts Options) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("sessiongen: create %s: %w", path, err)
	}
	if err := Generate(f, opts); err != nil {
		_ = f.Close()
		return fmt.Errorf("sessiongen: write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("sessiongen: close %s: %w", path, err)
	}
	return nil
}

// Generate writes one pi v3 session (header + opts.Entries entries, one
// JSON object per line) to w. The last entry written is the session's leaf.
func Generate(w io.Writer, opts Options) error {
	if err := opts.validate(); err != nil {
		return err
	}
	r := rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x9e3779b97f4a7c15))
	corpusSize := 64 * 1024
	if opts.Entries > 2000 {
		corpusSize = 512 * 1024
	}
	g := &generator{
		r:      r,
		o:      opts,
		w:      bufio.NewWriterSize(w, 1<<20),
		c:      newCorpus(r, corpusSize),
		ids:    make(map[uint32]struct{}, opts.Entries),
		now:    opts.Start,
		keepAt: -1,
	}
	if g.o.Version == 0 {
		g.o.Version = 3
	}
	if g.o.Version == 1 {
		// pi's v1 sessions were linear and knew only messages, model and
		// thinking changes and compactions.
		g.o.Branch, g.o.Extras, g.o.Metadata = 0, 0, g.o.Metadata/2
	}
	g.o2.b = make([]byte, 0, 64*1024)
	g.header()
	for g.n < opts.Entries && g.werr == nil {
		g.turn()
	}
	if g.o.TornTail && g.werr == nil {
		_, g.werr = g.w.WriteString(`{"type":"message","id":"0badf00d","parentId":`)
	}
	if g.werr != nil {
		return g.werr
	}
	return g.w.Flush()
}

func (g *generator) chance(p float64) bool { return p > 0 && g.r.Float64() < p }

func (g *generator) full() bool { return g.n >= g.o.Entries || g.werr != nil }

func (g *generator) newID() string {
	for {
		v := g.r.Uint32()
		if _, dup := g.ids[v]; dup {
			continue
		}
		g.ids[v] = struct{}{}
		var b [8]byte
		for i := 7; i >= 0; i-- {
			b[i] = hexDigits[v&0xF]
			v >>= 4
		}
		return string(b[:])
	}
}

func (g *generator) tick() {
	g.now = g.now.Add(time.Duration(200+g.r.IntN(20000)) * time.Millisecond)
}

func (g *generator) isoNow() string { return g.now.UTC().Format("2006-01-02T15:04:05.000Z") }

// begin starts a line; style is chosen per line so escaped lines are whole.
func (g *generator) begin() *obj {
	o := &g.o2
	o.b = o.b[:0]
	o.first = o.first[:0]
	o.style = escJS
	if g.chance(g.o.EscapedStrings) {
		o.style = escASCII
	}
	o.open()
	return o
}

func (g *generator) end() {
	o := &g.o2
	o.close()
	o.b = append(o.b, '\n')
	if g.werr == nil {
		_, g.werr = g.w.Write(o.b)
	}
}

func (g *generator) header() {
	o := g.begin()
	o.str("type", "session")
	if g.o.Version > 1 {
		o.int("version", int64(g.o.Version))
	}
	var u [16]byte
	for i := range u {
		u[i] = byte(g.r.Uint32())
	}
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	o.str("id", fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:]))
	o.str("timestamp", g.isoNow())
	o.str("cwd", g.o.Cwd)
	g.end()
}

// entry starts an entry line with pi's key order for most types
// (type, id, parentId, timestamp) and records it on the path.
func (g *generator) entry(typ string, k kind) (*obj, string) {
	o, id := g.startEntry(typ)
	g.envelope(o, id, k)
	return o, id
}

// startEntry starts an entry line with its type and picks its id; the
// caller writes the envelope (envelope) where pi's key order puts it.
func (g *generator) startEntry(typ string) (*obj, string) {
	g.tick()
	g.malformed()
	id := g.newID()
	o := g.begin()
	o.str("type", typ)
	return o, id
}

// envelope writes id, parentId and timestamp and records the entry on the
// path.
func (g *generator) envelope(o *obj, id string, k kind) {
	g.ids2(o, id)
	o.str("timestamp", g.isoNow())
	g.push(id, k)
}

// ids2 writes id and parentId, which v1 files do not have.
func (g *generator) ids2(o *obj, id string) {
	if g.o.Version == 1 {
		return
	}
	o.str("id", id)
	g.parent(o)
}

var junk = []string{
	"",
	"   ",
	`{"type":"message","id":"deadbeef","parentId":"`,
	"not json at all",
	`{"type":"label",}`,
}

// malformed maybe writes a line that pi's loader skips.
func (g *generator) malformed() {
	if g.chance(g.o.Malformed) && g.werr == nil {
		_, g.werr = g.w.WriteString(junk[g.r.IntN(len(junk))] + "\n")
	}
}

func (g *generator) parent(o *obj) {
	if len(g.path) == 0 {
		o.null("parentId")
		return
	}
	o.str("parentId", g.path[len(g.path)-1].id)
}

func (g *generator) push(id string, k kind) {
	g.path = append(g.path, pathEntry{id: id, kind: k})
	g.n++
}

// turn writes one user turn with whatever precedes it.
func (g *generator) turn() {
	if len(g.path) > 0 {
		if g.chance(g.o.Branch) {
			g.branch()
		}
		if !g.full() && g.chance(g.o.Compaction) {
			g.compaction()
		}
	}
	for _, f := range []func(){g.customMessage, g.customEntry, g.sessionInfo, g.bashExecution, g.customRole} {
		if !g.full() && g.chance(g.o.Extras) {
			f()
		}
	}
	for _, f := range []func(){g.modelChange, g.thinkingChange, g.label} {
		if !g.full() && g.chance(g.o.Metadata) {
			f()
		}
	}
	if g.full() {
		return
	}
	g.user()
	rounds := g.r.IntN(4)
	if g.chance(g.o.SplitTurn) {
		rounds = g.o.SplitTurnMin + g.r.IntN(g.o.SplitTurnMax-g.o.SplitTurnMin+1)
	}
	for i := 0; i < rounds && !g.full(); i++ {
		if ended := g.assistant(true); ended {
			return
		}
	}
	if !g.full() {
		g.assistant(false)
	}
}

// branch moves the write position back to the end of an earlier turn, so
// the entries after it become an abandoned branch.
func (g *generator) branch() {
	var ends []int
	for i := len(g.path) - 2; i >= 0 && len(ends) < 12; i-- {
		if g.path[i].turnEnd {
			ends = append(ends, i)
		}
	}
	if len(ends) == 0 {
		return
	}
	at := ends[g.r.IntN(len(ends))]
	g.path = g.path[:at+1]
	if g.keepAt > at {
		g.recomputeKeep()
	}
	g.ctx = g.ctx * 2 / 3
	if g.chance(g.o.BranchSummary) && !g.full() {
		g.branchSummary(g.path[at].id)
	}
}

// recomputeKeep finds the first-kept index of the last compaction still on
// the path after a branch cut it short.
func (g *generator) recomputeKeep() {
	g.keepAt = -1
	for i := len(g.path) - 1; i >= 0; i-- {
		if g.path[i].kind == kCompaction {
			g.keepAt = g.path[i].keep
			return
		}
	}
}

func (g *generator) fileLists(o *obj) {
	o.objKey("details")
	o.arrKey("readFiles")
	for _, p := range g.pickPaths(g.r.IntN(4)) {
		o.elemStr(p)
	}
	o.closeArr()
	o.arrKey("modifiedFiles")
	for _, p := range g.pickPaths(g.r.IntN(3)) {
		o.elemStr(p)
	}
	o.closeArr()
	o.close()
}

func (g *generator) pickPaths(n int) []string {
	out := make([]string, 0, n)
	seen := map[string]bool{}
	for len(out) < n {
		p := paths[g.r.IntN(len(paths))]
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

func (g *generator) branchSummary(fromID string) {
	o, _ := g.entry("branch_summary", kOther)
	o.str("fromId", fromID)
	summary := "The user explored a different conversation branch before returning here.\nSummary of that exploration:\n\n## Goal\n" +
		sentence(g.r, 8) + "\n\n## Progress\n- " + g.c.slice(g.r, 40+g.r.IntN(g.o.ProseMax))
	if g.r.IntN(10) == 0 {
		summary = "" // pi skips empty summaries when building the context
	}
	o.str("summary", summary)
	if g.r.IntN(4) != 0 {
		g.fileLists(o)
	}
	if g.chance(g.o.FromHook) {
		o.bool("fromHook", true)
	}
	g.end()
	g.path[len(g.path)-1].turnEnd = true
}

// compaction appends a compaction whose firstKeptEntryId is a user or
// assistant message after the previous compaction's kept point.
func (g *generator) compaction() {
	var cands []int
	lo := g.keepAt
	for i := len(g.path) - 1; i > lo && i >= len(g.path)-400; i-- {
		if k := g.path[i].kind; k == kUser || k == kAssistant {
			cands = append(cands, i)
		}
	}
	if len(cands) < 2 {
		return
	}
	// Keep a recent slice: candidates are newest first.
	keep := cands[g.r.IntN((len(cands)+2)/3)]
	keptID := g.path[keep].id
	o, _ := g.entry("compaction", kCompaction)
	summary := "## Goal\n" + sentence(g.r, 10) + "\n\n## Progress\n### Done\n- [x] " + g.c.slice(g.r, 100+g.r.IntN(2*g.o.ProseMax))
	o.str("summary", summary)
	if g.o.Version == 1 {
		// The index counts parsed lines with the header at 0; v1 files are
		// one linear chain, so that is the path index plus one.
		o.int("firstKeptEntryIndex", int64(keep+1))
	} else {
		o.str("firstKeptEntryId", keptID)
	}
	o.int("tokensBefore", int64(g.ctx+g.r.IntN(5000)))
	hook := g.chance(g.o.FromHook)
	if !hook || g.r.IntN(2) == 0 {
		g.fileLists(o)
	}
	if hook {
		o.bool("fromHook", true)
	}
	g.end()
	g.keepAt = keep
	g.ctx = g.ctx / 4
	g.path[len(g.path)-1].turnEnd = true
	g.path[len(g.path)-1].keep = keep
}

func (g *generator) modelChange() {
	g.model = g.r.IntN(len(models))
	o, _ := g.entry("model_change", kMeta)
	o.str("provider", models[g.model].provider)
	o.str("modelId", models[g.model].id)
	g.end()
}

func (g *generator) thinkingChange() {
	o, _ := g.entry("thinking_level_change", kMeta)
	o.str("thinkingLevel", thinkingLevels[g.r.IntN(len(thinkingLevels))])
	g.end()
}

func (g *generator) label() {
	if len(g.path) == 0 || g.o.Version == 1 {
		return
	}
	target := g.path[g.r.IntN(len(g.path))].id
	o, _ := g.entry("label", kMeta)
	o.str("targetId", target)
	if g.r.IntN(5) == 0 {
		o.str("label", "") // clears a label
	} else {
		o.str("label", sentence(g.r, 1+g.r.IntN(3)))
	}
	g.end()
}

func (g *generator) sessionInfo() {
	o, _ := g.entry("session_info", kMeta)
	o.str("name", sentence(g.r, 2+g.r.IntN(4)))
	g.end()
}

// customEntry writes a `custom` entry (extension state, never sent) with
// pi's key order: type, customType, data, id, parentId, timestamp.
func (g *generator) customEntry() {
	o, id := g.startEntry("custom")
	o.str("customType", "sessiongen-state")
	o.objKey("data")
	o.int("counter", int64(g.n))
	o.str("note", sentence(g.r, 4))
	o.arrKey("list")
	o.elemRaw("1")
	o.elemStr("ü")
	o.elemRaw("null")
	o.closeArr()
	o.close()
	g.envelope(o, id, kMeta)
	g.end()
}

// customMessage writes a custom_message entry (sent as a user-side message)
// with pi's key order: type, customType, content, display, details, id, ...
func (g *generator) customMessage() {
	o, id := g.startEntry("custom_message")
	o.str("customType", "sessiongen-note")
	text := "Context from an extension: " + g.c.slice(g.r, 20+g.r.IntN(g.o.ProseMax))
	g.textContent(o, text, 2, g.o.Image*3)
	o.bool("display", g.r.IntN(3) != 0)
	if g.r.IntN(2) == 0 {
		o.objKey("details")
		o.str("source", "sessiongen")
		o.close()
	}
	g.envelope(o, id, kOther)
	g.end()
	g.ctx += len(text) / 4
}

// textContent writes a message's "content": the text as a string one time
// in stringOneIn (never when 0), else as a text block followed, with the
// chance image, by an image block.
func (g *generator) textContent(o *obj, text string, stringOneIn int, image float64) {
	if stringOneIn > 0 && g.r.IntN(stringOneIn) == 0 {
		o.str("content", text)
		return
	}
	o.arrKey("content")
	o.elemObj()
	o.str("type", "text")
	o.str("text", text)
	o.close()
	if g.chance(image) {
		g.imageBlock(o)
	}
	o.closeArr()
}

func (g *generator) ms() int64 { return g.now.UnixMilli() }

// customRole writes a message entry whose message has role "custom" (what
// extensions inject); v2 files spell the role "hookMessage".
func (g *generator) customRole() {
	o, _ := g.entry("message", kOther)
	o.objKey("message")
	role := "custom"
	if g.o.Version == 2 {
		role = "hookMessage"
	}
	o.str("role", role)
	o.str("customType", "sessiongen-hook")
	text := g.c.slice(g.r, 10+g.r.IntN(g.o.ProseMax))
	g.textContent(o, text, 2, g.o.Image*3)
	o.bool("display", g.r.IntN(2) == 0)
	o.int("timestamp", g.ms())
	o.close()
	g.end()
	g.ctx += len(text) / 4
}

func (g *generator) bashExecution() {
	o, _ := g.entry("message", kOther)
	o.objKey("message")
	o.str("role", "bashExecution")
	cmd := []string{"ls -la", "go test ./...", "git status --short", "grep -rn \"TODO\" .", "echo 'héllo 😀'"}[g.r.IntN(5)]
	o.str("command", cmd)
	out := g.c.slice(g.r, g.r.IntN(g.o.ProseMax))
	o.str("output", out)
	switch g.r.IntN(4) {
	case 0:
		o.raw("exitCode", "1")
	case 1:
		o.null("exitCode")
	default:
		o.raw("exitCode", "0")
	}
	o.bool("cancelled", g.r.IntN(10) == 0)
	trunc := g.r.IntN(8) == 0
	o.bool("truncated", trunc)
	if trunc {
		o.str("fullOutputPath", "/tmp/pi-bash-"+strconv.Itoa(g.n)+".log")
	}
	o.int("timestamp", g.ms())
	if g.r.IntN(6) == 0 {
		o.bool("excludeFromContext", true)
	}
	o.close()
	g.end()
	g.ctx += (len(cmd) + len(out)) / 4
}

func (g *generator) user() {
	o, _ := g.entry("message", kUser)
	o.objKey("message")
	o.str("role", "user")
	text := sentence(g.r, 3+g.r.IntN(30))
	if g.r.IntN(8) == 0 {
		text += "\n" + g.c.slice(g.r, 200+g.r.IntN(2*g.o.ProseMax))
	}
	g.textContent(o, text, 3, g.o.Image)
	o.int("timestamp", g.ms())
	o.close()
	g.end()
	g.ctx += len(text) / 4
}

func (g *generator) imageBlock(o *obj) {
	o.elemObj()
	o.str("type", "image")
	o.str("data", g.c.imageData(g.r, 200+g.r.IntN(10*g.o.ProseMax)))
	o.str("mimeType", "image/png")
	o.close()
}

type call struct{ id, name string }

// assistant writes one assistant message. With tools it carries 1–3 tool
// calls followed by their results; it reports whether the turn ended early
// (aborted or errored).
func (g *generator) assistant(tools bool) (ended bool) {
	m := models[g.model]
	o, _ := g.entry("message", kAssistant)
	o.objKey("message")
	o.str("role", "assistant")
	o.arrKey("content")
	outChars := 0
	stop := "stop"
	switch {
	case g.chance(g.o.Aborted):
		stop, tools = "aborted", false
	case g.chance(g.o.Errored):
		stop, tools = "error", false
	case tools:
		stop = "toolUse"
	}
	if g.r.IntN(3) == 0 {
		t := g.c.slice(g.r, 40+g.r.IntN(g.o.ProseMax))
		o.elemObj()
		o.str("type", "thinking")
		o.str("thinking", t)
		o.str("thinkingSignature", g.c.imageData(g.r, 64))
		o.close()
		outChars += len(t)
	}
	if !tools || g.r.IntN(2) == 0 {
		if stop != "error" || g.r.IntN(2) == 0 {
			t := g.c.slice(g.r, 20+g.r.IntN(g.o.ProseMax))
			o.elemObj()
			o.str("type", "text")
			o.str("text", t)
			o.close()
			outChars += len(t)
		}
	}
	var calls []call
	if tools {
		for k := 1 + g.r.IntN(3); k > 0; k-- {
			g.calls++
			c := call{id: fmt.Sprintf("toolu_%05d%s", g.calls, g.newID()), name: toolNames[g.r.IntN(len(toolNames))]}
			o.elemObj()
			o.str("type", "toolCall")
			o.str("id", c.id)
			o.str("name", c.name)
			o.key("arguments")
			outChars += g.arguments(o, c.name)
			o.close()
			calls = append(calls, c)
		}
	}
	o.closeArr()
	o.str("api", m.api)
	o.str("provider", m.provider)
	o.str("model", m.id)
	g.usage(o, stop, outChars/4)
	o.str("stopReason", stop)
	if stop == "error" {
		o.str("errorMessage", []string{
			"529 {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}",
			"prompt is too long: 213462 tokens > 200000 maximum",
			"Connection error.",
		}[g.r.IntN(3)])
	}
	o.int("timestamp", g.ms())
	o.close()
	g.end()
	g.ctx += outChars / 4
	if stop == "aborted" || stop == "error" {
		g.path[len(g.path)-1].turnEnd = true
		return true
	}
	if !tools {
		g.path[len(g.path)-1].turnEnd = true
		return false
	}
	for _, c := range calls {
		if g.full() {
			return true
		}
		g.toolResult(c)
	}
	return false
}

func (g *generator) usage(o *obj, stop string, out int) {
	o.objKey("usage")
	in, cr, cw := 0, 0, 0
	if stop != "aborted" {
		in = 1 + g.r.IntN(40)
		cr = g.ctx * (70 + g.r.IntN(30)) / 100
		cw = g.ctx - cr
		if cw < 0 {
			cw = 0
		}
	}
	if stop == "error" && g.r.IntN(2) == 0 {
		in, cr, cw, out = 0, 0, 0, 0
	}
	o.int("input", int64(in))
	o.int("output", int64(out))
	o.int("cacheRead", int64(cr))
	o.int("cacheWrite", int64(cw))
	total := in + out + cr + cw
	if g.r.IntN(20) == 0 {
		total = 0 // some providers report no total: pi falls back to the sum
	}
	o.int("totalTokens", int64(total))
	o.objKey("cost")
	ci, co := float64(in)*3e-6, float64(out)*15e-6
	cc, cwc := float64(cr)*3e-7, float64(cw)*3.75e-6
	o.float("input", ci)
	o.float("output", co)
	o.float("cacheRead", cc)
	o.float("cacheWrite", cwc)
	o.float("total", ci+co+cc+cwc)
	o.close()
	o.close()
}

var toolNames = []string{"read", "read", "bash", "edit", "write", "grep", "read", "bash"}

// arguments writes a tool call's arguments object and returns its rough
// size in bytes. Keys are deliberately unsorted.
func (g *generator) arguments(o *obj, name string) int {
	start := len(o.b)
	o.open()
	p := paths[g.r.IntN(len(paths))]
	switch name {
	case "read":
		o.str("path", p)
		if g.r.IntN(3) == 0 {
			o.int("offset", int64(1+g.r.IntN(500)))
			o.int("limit", int64(50+g.r.IntN(400)))
		}
	case "write":
		o.str("path", p)
		o.str("content", g.c.slice(g.r, 50+g.r.IntN(2*g.o.ProseMax)))
	case "edit":
		o.str("path", p)
		if g.r.IntN(3) == 0 {
			o.arrKey("edits")
			for k := 1 + g.r.IntN(3); k > 0; k-- {
				o.elemObj()
				o.str("oldText", g.c.slice(g.r, 10+g.r.IntN(200)))
				o.str("newText", g.c.slice(g.r, 10+g.r.IntN(200)))
				o.close()
			}
			o.closeArr()
		} else {
			o.str("oldText", g.c.slice(g.r, 10+g.r.IntN(300)))
			o.str("newText", g.c.slice(g.r, 10+g.r.IntN(300)))
		}
	case "bash":
		o.str("command", []string{"go test ./... 2>&1 | head -50", "ls -la <dir> && echo \"done\"", "cat 'naïve.txt'", "find . -name '*.go' | xargs wc -l"}[g.r.IntN(4)])
		if g.r.IntN(2) == 0 {
			o.raw("timeout", []string{"120", "1.0", "1e2", "30.50", "0.5e1"}[g.r.IntN(5)])
		}
	case "grep":
		o.str("pattern", []string{"func \\w+\\(", "TODO|FIXME", "<[a-z]+>", "日本", "\\$\\{.*\\}"}[g.r.IntN(5)])
		o.str("path", p)
	}
	switch g.r.IntN(12) {
	case 0: // a non-string path: pi's file-op extraction ignores it
		if name == "bash" {
			o.raw("path", "42")
		}
	case 1:
		o.str("note", "")
	}
	if g.chance(g.o.OddArguments) {
		g.oddArguments(o)
	}
	o.close()
	return len(o.b) - start
}

// oddArguments appends members whose exact JSON.stringify length depends on
// JavaScript's rules: nested objects, integer-like keys (JS moves them to the
// front in ascending order), number spellings that JS normalises, and text
// with characters of every UTF-16 width.
func (g *generator) oddArguments(o *obj) {
	o.objKey("options")
	o.bool("ignoreCase", g.r.IntN(2) == 0)
	o.raw("context", []string{"2", "2.0", "-0.5", "1e2", "1E-3", "0.10", "-0"}[g.r.IntN(7)])
	o.arrKey("globs")
	o.elemStr("*.go")
	o.elemStr("*.ts")
	o.elemStr("**/テスト/*")
	o.closeArr()
	o.close()
	if g.r.IntN(3) == 0 {
		o.objKey("byLine")
		o.str("z", "last-key-first")
		o.str("10", "ten")
		o.str("2", "two")
		o.str("a", "a")
		o.close()
	}
	o.objKey("nested")
	o.raw("zeta", "1.0")
	o.arrKey("alpha")
	o.elemRaw("1e2")
	o.elemRaw("-0.5")
	o.elemRaw("3")
	o.elemObj()
	o.null("ü")
	o.close()
	o.closeArr()
	o.str("text", "<b>a & b</b> / café 😀 日本 \"q\" \\ \t")
	o.close()
}

func (g *generator) toolResult(c call) {
	o, _ := g.entry("message", kToolResult)
	o.objKey("message")
	o.str("role", "toolResult")
	o.str("toolCallId", c.id)
	o.str("toolName", c.name)
	n := g.o.ToolResultMin + g.r.IntN(g.o.ToolResultTypical-g.o.ToolResultMin+1)
	if g.chance(g.o.Large) {
		n = g.o.ToolResultTypical + g.r.IntN(g.o.ToolResultMax-g.o.ToolResultTypical+1)
	}
	text := g.c.slice(g.r, n)
	g.textContent(o, text, 0, g.o.Image)
	if c.name == "edit" && g.r.IntN(2) == 0 {
		o.objKey("details")
		o.str("diff", "-"+sentence(g.r, 3)+"\n+"+sentence(g.r, 3))
		o.int("firstChangedLine", int64(1+g.r.IntN(300)))
		o.close()
	}
	o.bool("isError", g.chance(g.o.ToolError))
	o.int("timestamp", g.ms())
	o.close()
	g.end()
	g.ctx += len(text) / 4
}
