package viewer

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/core/tokens"
	"github.com/pith-dev/pith/internal/entryview"
	"github.com/tidwall/gjson"
)

// Page limits: one request never builds more than this, whatever it asks.
const (
	maxTreeRows        = 1000
	defaultTreeRows    = 200
	maxContextMessages = 2000
)

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	enc := json.NewEncoder(w)
	_ = enc.Encode(v) // the client went away; nothing to tell it
}

func httpError(w http.ResponseWriter, code int, format string, args ...any) {
	w.Header().Set("Cache-Control", "no-store")
	http.Error(w, fmt.Sprintf(format, args...), code)
}

// intParam reads a non-negative integer query parameter, def when absent.
func intParam(r *http.Request, name string, def int) (int, error) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s must be a non-negative integer", name)
	}
	return n, nil
}

type sessionJSON struct {
	Path     string   `json:"path"`
	Version  int64    `json:"version"`
	ID       string   `json:"id"`
	Cwd      string   `json:"cwd"`
	Created  string   `json:"created"`
	Name     string   `json:"name,omitempty"`
	Entries  int      `json:"entries"`
	LeafID   string   `json:"leafId"`
	LeafRow  int      `json:"leafRow"`
	Warnings int      `json:"warnings"`
	Settings Settings `json:"settings"`
}

func (h *Handler) apiSession(w http.ResponseWriter, _ *http.Request) {
	s := h.snap.Load()
	out := sessionJSON{
		Path: h.shown, Version: s.version, ID: s.file.Header.ID, Cwd: s.file.Header.Cwd,
		Created: s.file.Header.Timestamp, Entries: len(s.nodes), LeafRow: -1,
		Warnings: len(s.file.Warnings), Settings: h.currentSettings(),
	}
	for i := len(s.file.Entries) - 1; i >= 0; i-- {
		if e := s.file.Entries[i]; e.Type == session.TypeSessionInfo {
			out.Name = e.Get("name").String()
			break
		}
	}
	if s.leaf != nil {
		out.LeafID = s.leaf.ID
		if r, ok := s.row[s.leaf.ID]; ok {
			out.LeafRow = r
		}
	}
	writeJSON(w, out)
}

type rowJSON struct {
	Row      int      `json:"row"`
	ID       string   `json:"id"`
	ParentID string   `json:"parentId,omitempty"`
	Type     string   `json:"type"`
	Role     string   `json:"role,omitempty"`
	Depth    int      `json:"depth"`
	Fork     bool     `json:"fork,omitempty"`
	Labels   []string `json:"labels,omitempty"`
	Text     string   `json:"text"`
	OnPath   bool     `json:"onPath,omitempty"`
	Leaf     bool     `json:"leaf,omitempty"`
	FromHook bool     `json:"fromHook,omitempty"`
	Pruned   bool     `json:"pruned,omitempty"`
}

func (s *snapshot) rowOf(i int) rowJSON {
	n := s.nodes[i]
	e := n.Entry
	r := rowJSON{
		Row: i, ID: e.ID, ParentID: e.ParentID, Type: e.Type, Role: e.Role(), Depth: n.Depth, Fork: n.Fork,
		Labels: n.Labels, Text: entryview.Describe(e), OnPath: s.onPath[e], Leaf: e == s.leaf,
	}
	switch e.Type {
	case session.TypeCompaction, session.TypeBranchSummary:
		r.FromHook = e.Get("fromHook").Bool()
	case session.TypeMessage:
		r.Pruned = e.Role() == session.RoleToolResult && e.Get("message.prunedAt").Exists()
	}
	return r
}

// apiTree serves rows [offset, offset+limit) of the tree in display order.
func (h *Handler) apiTree(w http.ResponseWriter, r *http.Request) {
	offset, err := intParam(r, "offset", 0)
	if err != nil {
		httpError(w, http.StatusBadRequest, "%v", err)
		return
	}
	limit, err := intParam(r, "limit", defaultTreeRows)
	if err != nil {
		httpError(w, http.StatusBadRequest, "%v", err)
		return
	}
	limit = min(limit, maxTreeRows)
	s := h.snap.Load()
	end := min(len(s.nodes), offset+limit)
	rows := make([]rowJSON, 0, max(0, end-offset))
	for i := offset; i < end; i++ {
		rows = append(rows, s.rowOf(i))
	}
	writeJSON(w, struct {
		Version int64     `json:"version"`
		Total   int       `json:"total"`
		Rows    []rowJSON `json:"rows"`
	}{s.version, len(s.nodes), rows})
}

// entry finds the entry named by the id parameter.
func (h *Handler) entry(w http.ResponseWriter, r *http.Request) (*snapshot, *session.Entry, bool) {
	s := h.snap.Load()
	id := r.URL.Query().Get("id")
	e := s.tree.Get(id)
	if id == "" || e == nil {
		httpError(w, http.StatusNotFound, "no entry with id %q in this session", id)
		return nil, nil, false
	}
	return s, e, true
}

type entryJSON struct {
	rowJSON
	Timestamp string          `json:"timestamp"`
	Line      int             `json:"line"`
	Tokens    int             `json:"tokens,omitempty"`
	Message   json.RawMessage `json:"message,omitempty"`
	PrunedAt  int64           `json:"prunedAt,omitempty"`
	// Archived is the tool result as it was before pruning, read from the
	// session's prune archive, when the archive still has it.
	Archived json.RawMessage `json:"archived,omitempty"`
	Raw      json.RawMessage `json:"raw"`
}

func (h *Handler) apiEntry(w http.ResponseWriter, r *http.Request) {
	s, e, ok := h.entry(w, r)
	if !ok {
		return
	}
	out := entryJSON{Timestamp: e.Timestamp(), Line: e.Line, Raw: e.Raw}
	if i, ok := s.row[e.ID]; ok {
		out.rowJSON = s.rowOf(i)
	} else {
		out.rowJSON = rowJSON{Row: -1, ID: e.ID, ParentID: e.ParentID, Type: e.Type, Text: entryview.Describe(e)}
	}
	if m, ok := session.EntryMessage(e); ok {
		out.Message = m.Raw
		out.Tokens = tokens.Estimate(m.Raw)
	}
	if out.Pruned {
		out.PrunedAt = e.Get("message.prunedAt").Int()
		out.Archived = h.archivedMessage(e.ID)
	}
	if !json.Valid(out.Raw) {
		out.Raw = nil // a line the loader kept but JSON rejects would break the whole answer
	}
	writeJSON(w, out)
}

// archivedMessage finds the last archived original of entry id in the prune
// archive, or nil. The archive is append-only and small next to the session.
func (h *Handler) archivedMessage(id string) json.RawMessage {
	f, err := h.openArchive()
	if err != nil {
		return nil
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 256<<20)
	var found json.RawMessage
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.Contains(line, []byte(strconv.Quote(id))) {
			continue
		}
		if gjson.GetBytes(line, "id").String() == id {
			if m := gjson.GetBytes(line, "entry.message"); m.IsObject() {
				found = json.RawMessage(m.Raw)
			}
		}
	}
	return found
}

type contextMessageJSON struct {
	EntryID string `json:"entryId"`
	Role    string `json:"role"`
	Label   string `json:"label"`
	Tokens  int    `json:"tokens"`
	// Part is "summary" (the compaction summary), "kept" (kept by the last
	// compaction), "after" (added since it) or "message" (no compaction).
	Part string `json:"part"`
}

type contextJSON struct {
	Version      int64  `json:"version"`
	LeafID       string `json:"leafId"`
	Tokens       int    `json:"tokens"`
	UsageTokens  int    `json:"usageTokens"`
	EstimateOnly bool   `json:"estimateOnly"`
	Settings
	Threshold   int    `json:"threshold"`
	WouldFire   bool   `json:"wouldFire"`
	CompactedBy string `json:"compactedBy,omitempty"`
	// SummarizedMessages counts the messages on the path that the last
	// compaction replaced by its summary; CompactedTokensBefore is the
	// context size it reported before it ran. The summarized messages are
	// counted, not estimated: on a long session they are tens of thousands.
	SummarizedMessages    int                  `json:"summarizedMessages"`
	CompactedTokensBefore int                  `json:"compactedTokensBefore"`
	Total                 int                  `json:"total"`
	Omitted               int                  `json:"omitted"`
	OmittedTokens         int                  `json:"omittedTokens"`
	Messages              []contextMessageJSON `json:"messages"`
}

// apiContext serves the context a model would see at the leaf parameter
// (the session's leaf when absent): every message with its estimate and its
// part, and the settings that decide when compaction fires. Past
// maxContextMessages the oldest are added up instead of listed.
func (h *Handler) apiContext(w http.ResponseWriter, r *http.Request) {
	s := h.snap.Load()
	leaf := r.URL.Query().Get("leaf")
	if leaf == "" {
		leaf = session.LeafDefault
	} else if !s.tree.Has(leaf) {
		httpError(w, http.StatusNotFound, "no entry with id %q in this session", leaf)
		return
	}
	ctx := s.tree.BuildContext(leaf)
	st := h.currentSettings()
	est := tokens.ContextSince(len(ctx.Messages), func(i int) []byte { return ctx.Messages[i].Raw }, ctx.SinceCompaction)
	out := contextJSON{
		Version: s.version, Tokens: est.Tokens, UsageTokens: est.UsageTokens, EstimateOnly: est.LastUsageIndex < 0,
		Settings: st, Threshold: st.ContextWindow - st.ReserveTokens,
		WouldFire: tokens.ShouldCompact(st.AutoCompaction, est.Tokens, st.ContextWindow, st.ReserveTokens),
		Total:     len(ctx.Messages),
	}
	if ctx.Leaf != nil {
		out.LeafID = ctx.Leaf.ID
	}
	compactedAt := -1
	for i := len(ctx.Path) - 1; i >= 0; i-- {
		if ctx.Path[i].Type == session.TypeCompaction {
			compactedAt = i
			break
		}
	}
	if compactedAt >= 0 {
		c := ctx.Path[compactedAt]
		out.CompactedBy = c.ID
		out.CompactedTokensBefore = int(c.Get("tokensBefore").Int())
		kept := c.Get("firstKeptEntryId").String()
		for _, e := range ctx.Path[:compactedAt] {
			if e.ID == kept {
				break
			}
			switch e.Type {
			case session.TypeMessage, session.TypeCustomMessage, session.TypeBranchSummary:
				out.SummarizedMessages++
			}
		}
	}
	first := max(0, len(ctx.Messages)-maxContextMessages)
	out.Messages = make([]contextMessageJSON, 0, len(ctx.Messages)-first)
	for i, m := range ctx.Messages {
		t := tokens.Estimate(m.Raw)
		if i < first {
			out.Omitted++
			out.OmittedTokens += t
			continue
		}
		part := "message"
		if compactedAt >= 0 {
			switch {
			case i == 0:
				part = "summary"
			case i < ctx.SinceCompaction:
				part = "kept"
			default:
				part = "after"
			}
		}
		out.Messages = append(out.Messages, contextMessageJSON{EntryID: m.EntryID, Role: m.Role, Label: messageLabel(m), Tokens: t, Part: part})
	}
	writeJSON(w, out)
}

// messageLabel names a message in a few words without decoding it.
func messageLabel(m session.Message) string {
	switch m.Role {
	case session.RoleToolResult:
		return "tool result: " + gjson.GetBytes(m.Raw, "toolName").String()
	case session.RoleAssistant:
		var names []string
		for _, b := range gjson.GetBytes(m.Raw, "content").Array() {
			if b.Get("type").String() == "toolCall" {
				names = append(names, b.Get("name").String())
			}
		}
		if len(names) > 0 {
			return fmt.Sprintf("assistant → %s", joinShort(names, 3))
		}
		return "assistant"
	case session.RoleBashExecution:
		return "bash: " + entryview.ClipLine(gjson.GetBytes(m.Raw, "command").String(), 40)
	case session.RoleCompactionSummary:
		return "compaction summary"
	case session.RoleBranchSummary:
		return "branch summary"
	case session.RoleCustom:
		return "custom: " + gjson.GetBytes(m.Raw, "customType").String()
	}
	return m.Role
}

func joinShort(names []string, n int) string {
	s := ""
	for i, name := range names {
		if i == n {
			return s + fmt.Sprintf(" +%d", len(names)-n)
		}
		if i > 0 {
			s += ", "
		}
		s += name
	}
	return s
}

type compactionItemJSON struct {
	ID               string `json:"id"`
	Type             string `json:"type"`
	Row              int    `json:"row"`
	Timestamp        string `json:"timestamp"`
	TokensBefore     int    `json:"tokensBefore,omitempty"`
	FirstKeptEntryID string `json:"firstKeptEntryId,omitempty"`
	FromID           string `json:"fromId,omitempty"`
	FromHook         bool   `json:"fromHook,omitempty"`
	OnPath           bool   `json:"onPath,omitempty"`
	Short            string `json:"short"`
}

// apiCompactions lists every compaction and branch summary in file order.
func (h *Handler) apiCompactions(w http.ResponseWriter, _ *http.Request) {
	s := h.snap.Load()
	items := []compactionItemJSON{}
	for _, e := range s.file.Entries {
		if e.Type != session.TypeCompaction && e.Type != session.TypeBranchSummary {
			continue
		}
		row, ok := s.row[e.ID]
		if !ok {
			row = -1
		}
		items = append(items, compactionItemJSON{
			ID: e.ID, Type: e.Type, Row: row, Timestamp: e.Timestamp(),
			TokensBefore: int(e.Get("tokensBefore").Int()), FirstKeptEntryID: e.Get("firstKeptEntryId").String(),
			FromID: e.Get("fromId").String(), FromHook: e.Get("fromHook").Bool(), OnPath: s.onPath[e],
			Short: summaryLine(e),
		})
	}
	writeJSON(w, struct {
		Version int64                `json:"version"`
		Items   []compactionItemJSON `json:"items"`
	}{s.version, items})
}

type refJSON struct {
	ID   string `json:"id"`
	Row  int    `json:"row"`
	Text string `json:"text"`
}

type compactionJSON struct {
	compactionItemJSON
	Summary      string          `json:"summary"`
	ShortSummary string          `json:"shortSummary,omitempty"`
	TokensAfter  int             `json:"tokensAfter"`
	CutPoint     *refJSON        `json:"cutPoint,omitempty"`
	SplitTurn    bool            `json:"splitTurn"`
	TurnStart    *refJSON        `json:"turnStart,omitempty"`
	From         *refJSON        `json:"from,omitempty"`
	ReadFiles    []string        `json:"readFiles"`
	Modified     []string        `json:"modifiedFiles"`
	Producer     string          `json:"producer"`
	Reason       string          `json:"reason"`
	Details      json.RawMessage `json:"details,omitempty"`
	PreserveData json.RawMessage `json:"preserveData,omitempty"`
	// Timeline is the hook timeline of the run when the file records one;
	// entries written today carry none, and the page says so.
	Timeline json.RawMessage `json:"timeline,omitempty"`
}

func (s *snapshot) ref(e *session.Entry) *refJSON {
	if e == nil {
		return nil
	}
	row, ok := s.row[e.ID]
	if !ok {
		row = -1
	}
	return &refJSON{ID: e.ID, Row: row, Text: entryview.Describe(e)}
}

// apiCompaction explains one compaction or branch summary.
func (h *Handler) apiCompaction(w http.ResponseWriter, r *http.Request) {
	s, e, ok := h.entry(w, r)
	if !ok {
		return
	}
	if e.Type != session.TypeCompaction && e.Type != session.TypeBranchSummary {
		httpError(w, http.StatusNotFound, "entry %s is a %s, not a compaction or branch summary", e.ID, e.Type)
		return
	}
	row, ok := s.row[e.ID]
	if !ok {
		row = -1
	}
	out := compactionJSON{
		compactionItemJSON: compactionItemJSON{
			ID: e.ID, Type: e.Type, Row: row, Timestamp: e.Timestamp(),
			TokensBefore: int(e.Get("tokensBefore").Int()), FirstKeptEntryID: e.Get("firstKeptEntryId").String(),
			FromID: e.Get("fromId").String(), FromHook: e.Get("fromHook").Bool(), OnPath: s.onPath[e],
			Short: summaryLine(e),
		},
		Summary: e.Get("summary").String(), ShortSummary: e.Get("shortSummary").String(),
		ReadFiles: stringsAt(e, "details.readFiles"), Modified: stringsAt(e, "details.modifiedFiles"),
		Producer: "the configured summarizer",
		// Older entries, and pi's, do not record the reason (manual,
		// threshold, overflow); the engine's details.reason replaces this.
		Reason: "not recorded in the session file",
	}
	if out.FromHook {
		out.Producer = "a plugin (session_before_compact supplied it)"
		if e.Type == session.TypeBranchSummary {
			out.Producer = "a plugin (session_before_tree supplied it)"
		}
	}
	if d := e.Get("details"); d.Exists() {
		out.Details = json.RawMessage(d.Raw)
	}
	if p := e.Get("preserveData"); p.Exists() {
		out.PreserveData = json.RawMessage(p.Raw)
	}
	if r := e.Get("details.reason").String(); r != "" && e.Type == session.TypeCompaction {
		out.Reason = r // the engine records it since compactions carry a timeline
	}
	if t := e.Get("details.hookTimeline"); t.IsArray() {
		out.Timeline = json.RawMessage(t.Raw)
	}
	ctx := s.tree.BuildContext(e.ID)
	out.TokensAfter = tokens.ContextSince(len(ctx.Messages), func(i int) []byte { return ctx.Messages[i].Raw }, ctx.SinceCompaction).Tokens
	if e.Type == session.TypeCompaction {
		kept := s.tree.Get(out.FirstKeptEntryID)
		out.CutPoint = s.ref(kept)
		if kept != nil && kept.Role() != session.RoleUser && kept.Type == session.TypeMessage {
			// The cut falls inside a turn: its start was summarized
			// separately as the turn prefix.
			out.SplitTurn = true
			path := s.tree.Path(kept)
			for i := len(path) - 1; i >= 0; i-- {
				if path[i].Role() == session.RoleUser {
					out.TurnStart = s.ref(path[i])
					break
				}
			}
		}
	} else {
		out.From = s.ref(s.tree.Get(out.FromID))
		out.Reason = "tree navigation: the branch ending at the entry below was left"
	}
	writeJSON(w, out)
}

func stringsAt(e *session.Entry, path string) []string {
	out := []string{}
	for _, v := range e.Get(path).Array() {
		out = append(out, v.String())
	}
	return out
}

// apiEvents streams the file's version as server-sent events: one at once,
// then one after every reload, and a comment every 20 s to keep proxies
// from closing an idle stream.
func (h *Handler) apiEvents(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		httpError(w, http.StatusInternalServerError, "streaming is not supported here")
		return
	}
	release, ok := takeStream(h.streams, w, r)
	if !ok {
		return
	}
	defer release()
	ch, cancel := h.subscribe()
	defer cancel()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	send := func() bool {
		s := h.snap.Load()
		_, err := fmt.Fprintf(w, "event: version\ndata: {\"version\":%d,\"entries\":%d}\n\n", s.version, len(s.nodes))
		fl.Flush()
		return err == nil
	}
	if _, err := fmt.Fprint(w, "retry: 1000\n"); err != nil || !send() {
		return
	}
	tick := time.NewTicker(20 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-h.done:
			return
		case <-ch:
			if !send() {
				return
			}
		case <-tick.C:
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil {
				return
			}
			fl.Flush()
		}
	}
}

// summaryLine is a summary in one line for a list: its short summary when
// it has one, else its first line that is not a Markdown heading.
func summaryLine(e *session.Entry) string {
	if s := e.Get("shortSummary").String(); s != "" {
		return entryview.ClipLine(s, 80)
	}
	for line := range strings.Lines(e.Get("summary").String()) {
		t := strings.TrimSpace(line)
		if t == "" || strings.HasPrefix(t, "#") || strings.HasPrefix(t, "<") {
			continue // a heading or a tag line says nothing on its own
		}
		if t = strings.TrimSpace(strings.TrimLeft(t, "-*")); t != "" && !strings.HasSuffix(t, ":") {
			return entryview.ClipLine(t, 80)
		}
	}
	return ""
}
