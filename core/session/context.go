package session

// Context is what BuildContext produces: the messages for the model and the
// settings in force at the leaf.
type Context struct {
	Messages      []Message
	ThinkingLevel string
	Model         *ModelRef
	// Leaf is the entry the context was built for, nil for an empty context.
	Leaf *Entry
	// Path is the walk from the root to Leaf.
	Path []*Entry
	// SinceCompaction is the index of the first message that came after
	// the last compaction on the path (0 without one). Usage reported by
	// an assistant message before it describes the context as it was
	// before the compaction, not this one.
	SinceCompaction int
}

// ModelRef names a model.
type ModelRef struct {
	Provider string `json:"provider"`
	ModelID  string `json:"modelId"`
}

// LeafDefault asks BuildContext for the default leaf (the last entry).
const LeafDefault = "\x00default"

// BuildContext builds the context for leafID (docs/behaviour.md §2). leafID "" gives an
// empty context; LeafDefault or an unknown id uses the last entry.
func (t *Tree) BuildContext(leafID string) Context {
	ctx := Context{ThinkingLevel: "off"}
	if leafID == "" {
		return ctx
	}
	leaf := t.lastWithID(leafID)
	if leaf == nil {
		leaf = t.Last()
	}
	if leaf == nil {
		return ctx
	}
	path, facts := t.pathAndFacts(leaf)
	ctx.Leaf, ctx.Path = leaf, path
	if facts.haveThinking {
		ctx.ThinkingLevel = facts.thinking
	}
	if facts.haveModel {
		model := facts.model
		ctx.Model = &model
	}
	compactionAt := facts.compactionAt
	if compactionAt < 0 {
		msgs := make([]Message, 0, len(path))
		for _, e := range path {
			msgs = AppendEntryMessage(msgs, e)
		}
		ctx.Messages = msgs
		return ctx
	}
	c := path[compactionAt]
	from := t.firstKept(path[:compactionAt], c.Get("firstKeptEntryId").String())
	// Room for the summary, the kept entries and those after the
	// compaction, not for the whole path: a long session's context is a
	// small part of it, and a slice sized by the path cost every
	// compaction and every rebuild an allocation (cleared, and scanned by
	// the collector while it lived) that grew with the session.
	msgs := make([]Message, 0, 1+(compactionAt-from)+(len(path)-compactionAt-1))
	msgs = append(msgs, NewCompactionSummary(c.Get("summary").String(), int(c.Get("tokensBefore").Int()), c.Timestamp(), c.ID))
	for _, e := range path[from:compactionAt] {
		msgs = AppendEntryMessage(msgs, e)
	}
	ctx.SinceCompaction = len(msgs)
	for _, e := range path[compactionAt+1:] {
		msgs = AppendEntryMessage(msgs, e)
	}
	ctx.Messages = msgs
	return ctx
}

// AppendEntryMessage appends the message an entry contributes to a context
// (docs/behaviour.md §2 step 4), if any.
func AppendEntryMessage(msgs []Message, e *Entry) []Message {
	if m, ok := EntryMessage(e); ok {
		msgs = append(msgs, m)
	}
	return msgs
}

// EntryMessage is the message an entry contributes to a context: a message
// entry's message, a custom_message as a custom message, a non-empty
// branch_summary as a branchSummary message. Compactions are handled by
// BuildContext and give nothing here.
func EntryMessage(e *Entry) (Message, bool) {
	switch e.Type {
	case TypeMessage:
		raw := e.MessageRaw()
		if raw == nil {
			return Message{}, false
		}
		return Message{Role: e.Role(), Raw: raw, EntryID: e.ID, ToolPaths: e.toolPaths, ToolPathsKnown: e.toolsKnown}, true
	case TypeCustomMessage, TypeBranchSummary:
		if b := e.builtMessage(); !b.empty {
			return b.msg, true
		}
	}
	return Message{}, false
}

// firstKept is the index in before (the path up to a compaction) of the
// compaction's first kept entry: the first entry with that id; len(before)
// (nothing kept) when there is none.
func (t *Tree) firstKept(before []*Entry, firstKept string) int {
	if from, ok := t.keptFrom(before, firstKept); ok {
		return from
	}
	for i, e := range before {
		if e.ID == firstKept {
			return i
		}
	}
	return len(before)
}

// keptFrom is where on before the first entry with the id firstKept is,
// found from the end when the tree knows its ids are unique: the kept
// entries are the last few before a compaction, and a scan from the root
// compared every id of a long session on every call. ok is false when the
// tree cannot say (its index not built, as for a one-shot command, or
// an id repeated) or none has the id; the caller then scans from the
// start, which is the rule.
func (t *Tree) keptFrom(before []*Entry, firstKept string) (int, bool) {
	// Entries without an id are not in the index, and may be many.
	if firstKept == "" || !t.uniqueIDs() {
		return 0, false
	}
	for i := len(before) - 1; i >= 0; i-- {
		if before[i].ID == firstKept {
			return i, true
		}
	}
	return 0, false
}
