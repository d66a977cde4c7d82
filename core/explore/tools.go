package explore

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/pith-dev/pith/core/summary"
	"github.com/pith-dev/pith/core/workspace"
)

// The tool names; they and their argument shapes are a stable interface
// (documented in docs/explore.md).
const (
	ToolSearch    = "search_session_log"
	ToolReadItems = "read_session_items"
	ToolReadFile  = "read_file"
	ToolMarkRead  = "mark_read_required"
	ToolReference = "add_reference"
	ToolSummary   = "write_summary"
)

// Limits of single tool calls, independent of the budgets: a search lists
// at most maxSearchLimit items, and a compact-mode item shows at most
// compactClip runes of text.
const (
	defaultSearchLimit = 20
	maxSearchLimit     = 100
	snippetWidth       = 160
	compactClip        = 1500
	defaultReadItems   = 20
)

// Tools returns the tool definitions offered to the worker.
func Tools() []summary.Tool {
	return []summary.Tool{
		{
			Name: ToolSearch,
			Description: "Search the session log of the range being compacted (items #1..#N of the overview). " +
				"Every word of query must occur (case-insensitive) in an item's text, thinking, tool-call arguments or tool output. " +
				"Filters: role (user, assistant, toolResult, bash, system), tool (a tool name), from/to (item numbers, inclusive), limit (default 20, at most 100). " +
				"Returns matching items as `#N id role tool: snippet`. The retained tail after the range is out of bounds.",
			Parameters: schema(`{"type":"object","properties":{
				"query":{"type":"string","description":"words that must all occur; empty lists items matching the filters"},
				"role":{"type":"string","description":"user, assistant, toolResult, bash or system"},
				"tool":{"type":"string","description":"only items of this tool (its calls and results)"},
				"from":{"type":"integer","description":"first item number"},
				"to":{"type":"integer","description":"last item number"},
				"limit":{"type":"integer","description":"most items to return (default 20, max 100)"}},
				"required":["query"]}`),
		},
		{
			Name: ToolReadItems,
			Description: "Read items of the range being compacted, by number range (from/to, inclusive; default the 20 items from `from`) or by entry ids. " +
				"mode \"compact\" (default) clips texts and shows tool outputs as their size only; mode \"full\" includes tool outputs and thinking. " +
				"Large results are truncated to protect the budget: narrow the range then. The retained tail after the range is out of bounds.",
			Parameters: schema(`{"type":"object","properties":{
				"from":{"type":"integer","description":"first item number"},
				"to":{"type":"integer","description":"last item number"},
				"ids":{"type":"array","items":{"type":"string"},"description":"entry ids instead of a range"},
				"mode":{"type":"string","enum":["compact","full"]}}}`),
		},
		{
			Name: ToolReadFile,
			Description: "Read the current content of a file in the session's workspace (the session's cwd), by lines: offset is the first line (1-based), limit the number of lines. " +
				"Paths are relative to the workspace or absolute inside it; nothing outside it can be read.",
			Parameters: schema(`{"type":"object","properties":{
				"path":{"type":"string"},
				"offset":{"type":"integer","description":"first line, 1-based"},
				"limit":{"type":"integer","description":"number of lines"}},
				"required":["path"]}`),
		},
		{
			Name: ToolMarkRead,
			Description: "Mark a workspace file whose current content the agent needs right after compaction: its whole content is put into the new context. " +
				"All marked files together must fit the auto-read budget; a file that does not fit is refused (use add_reference instead). Check the file with read_file first.",
			Parameters: schema(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`),
		},
		{
			Name:        ToolReference,
			Description: "Record a workspace file the agent should know about (listed by path with the note in the new context, without content).",
			Parameters: schema(`{"type":"object","properties":{
				"path":{"type":"string"},
				"note":{"type":"string","description":"why it matters, one line"}},
				"required":["path"]}`),
		},
		{
			Name: ToolSummary,
			Description: "Store the structured summary that replaces the range in the new context. Call it with the complete summary; the last call wins. " +
				"After it the compaction ends unless the summary is too long.",
			Parameters: schema(`{"type":"object","properties":{"text":{"type":"string","description":"the complete summary in Markdown"}},"required":["text"]}`),
		},
	}
}

// toolsFor is Tools without the workspace tools when files is false:
// a worker with no workspace to read is not offered tools that can only
// refuse, and so is not led to spend turns on them.
func toolsFor(files bool) []summary.Tool {
	all := Tools()
	if files {
		return all
	}
	var out []summary.Tool
	for _, t := range all {
		if !fileTool(t.Name) {
			out = append(out, t)
		}
	}
	return out
}

func fileTool(name string) bool {
	return name == ToolReadFile || name == ToolMarkRead || name == ToolReference
}

func schema(s string) json.RawMessage {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		panic("explore: bad tool schema: " + err.Error())
	}
	b, _ := json.Marshal(v)
	return b
}

// toolState is what the tools collect during one run.
type toolState struct {
	r         *Range
	ws        *workspace.Workspace
	b         Budgets
	marked    []string
	markedTok int
	refs      []workspace.Reference
	summary   string
	wrote     bool
}

// errNoWorkspace is the answer of the file tools when the session has no
// usable cwd.
var errNoWorkspace = errors.New("no workspace: the workspace file tools are off for this compaction")

// run executes one tool call and returns the text for the model; isError
// marks a refusal or a bad call.
func (s *toolState) run(c summary.ToolCall) (string, bool) {
	args := c.Arguments
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	switch c.Name {
	case ToolSearch:
		var a struct {
			Query string `json:"query"`
			Role  string `json:"role"`
			Tool  string `json:"tool"`
			From  int    `json:"from"`
			To    int    `json:"to"`
			Limit int    `json:"limit"`
		}
		if err := json.Unmarshal(args, &a); err != nil {
			return badArgs(c.Name, err)
		}
		return s.search(a.Query, a.Role, a.Tool, a.From, a.To, a.Limit), false
	case ToolReadItems:
		var a struct {
			From int      `json:"from"`
			To   int      `json:"to"`
			IDs  []string `json:"ids"`
			Mode string   `json:"mode"`
		}
		if err := json.Unmarshal(args, &a); err != nil {
			return badArgs(c.Name, err)
		}
		if a.Mode != "" && a.Mode != "compact" && a.Mode != "full" {
			return fmt.Sprintf("mode must be \"compact\" or \"full\", got %q", a.Mode), true
		}
		return s.readItems(a.From, a.To, a.IDs, a.Mode == "full")
	case ToolReadFile:
		var a struct {
			Path   string `json:"path"`
			Offset int    `json:"offset"`
			Limit  int    `json:"limit"`
		}
		if err := json.Unmarshal(args, &a); err != nil {
			return badArgs(c.Name, err)
		}
		return s.readFile(a.Path, a.Offset, a.Limit)
	case ToolMarkRead:
		var a struct {
			Path string `json:"path"`
		}
		if err := json.Unmarshal(args, &a); err != nil {
			return badArgs(c.Name, err)
		}
		return s.mark(a.Path)
	case ToolReference:
		var a struct {
			Path string `json:"path"`
			Note string `json:"note"`
		}
		if err := json.Unmarshal(args, &a); err != nil {
			return badArgs(c.Name, err)
		}
		return s.reference(a.Path, a.Note)
	case ToolSummary:
		var a struct {
			Text string `json:"text"`
		}
		if err := json.Unmarshal(args, &a); err != nil {
			return badArgs(c.Name, err)
		}
		if strings.TrimSpace(a.Text) == "" {
			return "the summary is empty; call write_summary with the complete summary", true
		}
		s.summary, s.wrote = a.Text, true
		return fmt.Sprintf("summary stored (~%d tokens; target %d, limit %d)", textTokens(a.Text), s.b.SummaryTarget, s.b.SummaryMax), false
	}
	return fmt.Sprintf("unknown tool %q; the tools are %s, %s, %s, %s, %s and %s", c.Name,
		ToolSearch, ToolReadItems, ToolReadFile, ToolMarkRead, ToolReference, ToolSummary), true
}

func badArgs(tool string, err error) (string, bool) {
	return fmt.Sprintf("%s: the arguments are not the documented JSON object: %v", tool, err), true
}

// bounds clamps an item range to the range being compacted and says what
// was out of bounds.
func (s *toolState) bounds(from, to int) (int, int, string) {
	n := s.r.Len()
	note := ""
	if from <= 0 {
		from = 1
	}
	if to <= 0 || to > n {
		if to > n {
			note = fmt.Sprintf("(items after #%d are the retained tail or later: out of bounds)\n", n)
		}
		to = n
	}
	return from, to, note
}

func (s *toolState) search(query, role, tool string, from, to, limit int) string {
	if limit <= 0 {
		limit = defaultSearchLimit
	}
	limit = min(limit, maxSearchLimit)
	from, to, note := s.bounds(from, to)
	terms := strings.Fields(strings.ToLower(query))
	var b strings.Builder
	b.WriteString(note)
	found := 0
	for i := to; i >= from && found < limit; i-- {
		if role != "" && !strings.EqualFold(roleLabel(s.r.Role(i)), role) && !strings.EqualFold(s.r.Role(i), role) {
			continue
		}
		it := s.r.Item(i)
		if tool != "" && !itemHasTool(it, tool) {
			continue
		}
		hay := strings.ToLower(searchText(it))
		at := -1
		ok := true
		for _, t := range terms {
			k := strings.Index(hay, t)
			if k < 0 {
				ok = false
				break
			}
			if at < 0 {
				at = k
			}
		}
		if !ok {
			continue
		}
		found++
		fmt.Fprintf(&b, "#%d %s %s%s: %s\n", it.N, it.EntryID, roleLabel(it.Role), toolOf(it), snippet(searchText(it), at))
	}
	if found == 0 {
		fmt.Fprintf(&b, "no items #%d–#%d match", from, to)
		return b.String()
	}
	if found == limit {
		fmt.Fprintf(&b, "(limit %d reached, newest first; narrow with from/to or raise limit)\n", limit)
	}
	return b.String()
}

func itemHasTool(it *Item, tool string) bool {
	if strings.EqualFold(it.ToolName, tool) {
		return true
	}
	for _, c := range it.Calls {
		if strings.EqualFold(c.Name, tool) {
			return true
		}
	}
	return false
}

func toolOf(it *Item) string {
	if it.ToolName != "" {
		return " " + it.ToolName
	}
	if len(it.Calls) > 0 {
		names := make([]string, len(it.Calls))
		for i, c := range it.Calls {
			names[i] = c.Name
		}
		return " " + strings.Join(names, ",")
	}
	return ""
}

// searchText is everything of an item a search looks in.
func searchText(it *Item) string {
	var b strings.Builder
	b.WriteString(it.Text)
	for _, c := range it.Calls {
		b.WriteString("\n" + c.Name + " " + string(c.Args))
	}
	if it.Thinking != "" {
		b.WriteString("\n" + it.Thinking)
	}
	if it.Output != "" {
		b.WriteString("\n" + it.Output)
	}
	return b.String()
}

// snippet is a one-line excerpt of s around byte offset at.
func snippet(s string, at int) string {
	// at comes from the lower-cased text, which can differ in length from
	// s for a few letters (İ): clamp it, then step back to a rune start.
	at = min(max(at, 0), len(s))
	start := max(0, at-snippetWidth/3)
	for start > 0 && start < len(s) && !utf8Start(s[start]) {
		start--
	}
	out := oneLine(clip(s[start:], snippetWidth))
	if start > 0 {
		out = "…" + out
	}
	return out
}

func utf8Start(c byte) bool { return c&0xC0 != 0x80 }

func (s *toolState) readItems(from, to int, ids []string, full bool) (string, bool) {
	var picks []int
	var b strings.Builder
	if len(ids) > 0 {
		want := map[string]bool{}
		for _, id := range ids {
			want[id] = true
		}
		for i := 1; i <= s.r.Len(); i++ {
			if id := s.r.msgs[i-1].EntryID; want[id] {
				picks = append(picks, i)
				delete(want, id)
			}
		}
		for id := range want {
			fmt.Fprintf(&b, "(entry %s is not in the range being compacted: out of bounds or unknown)\n", id)
		}
	} else {
		if from > 0 && to <= 0 {
			to = from + defaultReadItems - 1
		}
		if from <= 0 && to > 0 {
			from = max(1, to-defaultReadItems+1)
		}
		if from <= 0 && to <= 0 {
			from, to = 1, defaultReadItems
		}
		if from > s.r.Len() {
			return fmt.Sprintf("item #%d is past the range being compacted (#1–#%d); the retained tail is out of bounds", from, s.r.Len()), true
		}
		var note string
		from, to, note = s.bounds(from, to)
		b.WriteString(note)
		for i := from; i <= to; i++ {
			picks = append(picks, i)
		}
	}
	for _, i := range picks {
		b.WriteString(renderItem(s.r, s.r.Item(i), full))
	}
	return b.String(), false
}

// renderItem writes one item for read_session_items.
func renderItem(r *Range, it *Item, full bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "#%d [%s] id=%s", it.N, roleLabel(it.Role), it.EntryID)
	if it.ToolName != "" {
		fmt.Fprintf(&b, " tool=%s %s", it.ToolName, status(it.IsError))
	}
	b.WriteString("\n")
	text := it.Text
	if !full {
		text = clip(text, compactClip)
	}
	if text != "" {
		b.WriteString(text + "\n")
	}
	if full && it.Thinking != "" {
		b.WriteString("[thinking] " + it.Thinking + "\n")
	}
	argWidth := 300
	if full {
		argWidth = 1 << 20
	}
	for _, c := range it.Calls {
		fmt.Fprintf(&b, "→ %s %s\n", c.Name, callSummary(c, argWidth))
	}
	if it.Output != "" {
		if full {
			b.WriteString("[output]\n" + it.Output + "\n")
		} else {
			fmt.Fprintf(&b, "[output: ~%d tokens; mode \"full\" shows it]\n", textTokens(it.Output))
		}
	}
	b.WriteString("\n")
	return b.String()
}

func (s *toolState) readFile(path string, offset, limit int) (string, bool) {
	if s.ws == nil {
		return errNoWorkspace.Error(), true
	}
	f, err := s.ws.Read(path, workspace.ReadOptions{Offset: offset, Limit: limit})
	if err != nil {
		return err.Error(), true
	}
	var b strings.Builder
	end := f.StartLine + f.Lines - 1
	fmt.Fprintf(&b, "%s, lines %d–%d (%d bytes in all)", f.Path, f.StartLine, end, f.Size)
	switch {
	case f.EOF:
		b.WriteString(", end of file\n")
	case f.Truncated:
		fmt.Fprintf(&b, "; cut at the read bound: continue with offset %d\n", end+1)
	default:
		fmt.Fprintf(&b, "; more follows from offset %d\n", end+1)
	}
	b.WriteString(f.Content)
	return b.String(), false
}

func (s *toolState) mark(path string) (string, bool) {
	if s.ws == nil {
		return errNoWorkspace.Error(), true
	}
	rel, err := s.ws.Rel(path)
	if err != nil {
		return err.Error(), true
	}
	for _, m := range s.marked {
		if m == rel {
			return rel + " is already marked", false
		}
	}
	left := s.b.AutoReadBudget - s.markedTok
	f, err := s.ws.Read(rel, workspace.ReadOptions{MaxBytes: max(1, left*12)})
	if err != nil {
		return err.Error(), true
	}
	n := textTokens(f.Content)
	if !f.EOF || f.Truncated || n > left {
		return fmt.Sprintf("%s does not fit the auto-read budget (%d of %d tokens left); use add_reference for it", rel, left, s.b.AutoReadBudget), true
	}
	s.marked = append(s.marked, rel)
	s.markedTok += n
	return fmt.Sprintf("%s marked (~%d tokens; %d of %d auto-read tokens left)", rel, n, s.b.AutoReadBudget-s.markedTok, s.b.AutoReadBudget), false
}

func (s *toolState) reference(path, note string) (string, bool) {
	if s.ws == nil {
		return errNoWorkspace.Error(), true
	}
	rel, err := s.ws.Rel(path)
	if err != nil {
		return err.Error(), true
	}
	// A reference carries no content, but it would point the agent at
	// the file after the compaction.
	if err := s.ws.Denied(rel); err != nil {
		return err.Error(), true
	}
	for i, r := range s.refs {
		if r.Path == rel {
			s.refs[i].Note = note
			return rel + " reference updated", false
		}
	}
	s.refs = append(s.refs, workspace.Reference{Path: rel, Note: note})
	return rel + " referenced", false
}
