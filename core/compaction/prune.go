package compaction

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/core/tokens"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// PruneSettings are the tool-output pruning settings of docs/behaviour.md §8.
type PruneSettings struct {
	// Protect is how many tokens of the newest tool output are never pruned.
	Protect int `json:"protect"`
	// Minimum is the least total saving worth a rewrite of the session.
	Minimum int `json:"minimum"`
	// ProtectedTools are tools whose results are never pruned.
	ProtectedTools []string `json:"protectedTools"`
	// Thinking, when above 0, also prunes the thinking blocks of assistant
	// messages older than the newest Thinking ones (see planThinking).
	Thinking int `json:"thinking,omitempty"`
}

// DefaultPruneSettings are the defaults of docs/behaviour.md §8.
func DefaultPruneSettings() PruneSettings {
	return PruneSettings{Protect: 40000, Minimum: 20000, ProtectedTools: []string{"skill", "read"}}
}

// PrunedItem is one tool result to prune.
type PrunedItem struct {
	EntryID string
	// Tokens is the result's estimate; Saving what pruning it saves.
	Tokens int
	Saving int
	// Thinking: the item is an assistant message whose thinking blocks
	// are removed, not a tool result replaced by a notice.
	Thinking bool
}

// PrunePlan lists the tool results to prune, newest first. An empty plan
// means pruning is not worth it.
type PrunePlan struct {
	Items []PrunedItem
	// Saving is the total saving; subtract it from the context tokens
	// before the compaction threshold test.
	Saving int
}

// PruneNotice is the text that replaces a pruned tool result.
func PruneNotice(tokens int) string {
	return "[Output truncated - " + strconv.Itoa(tokens) + " tokens]"
}

// PlanPrune chooses tool results to prune on path (docs/behaviour.md §8). It walks the
// results that are in the current context from newest to oldest; the
// newest Protect tokens stay, results of protected tools and results pruned
// before are skipped, and every older result is pruned for its tokens minus
// the notice's. If the total saving is below Minimum the plan is empty.
func PlanPrune(path []*session.Entry, s PruneSettings) PrunePlan {
	from := contextStart(path)
	var plan PrunePlan
	seen := 0
	for i := len(path) - 1; i >= from; i-- {
		e := path[i]
		if e.Type != session.TypeMessage || e.Role() != session.RoleToolResult {
			continue
		}
		if slices.Contains(s.ProtectedTools, e.Get("message.toolName").String()) {
			continue
		}
		if e.Get("message.prunedAt").Exists() {
			continue
		}
		n := e.MessageTokens()
		seen += n
		if seen <= s.Protect {
			continue
		}
		saving := n - tokens.EstimateText(PruneNotice(n))
		if saving <= 0 {
			continue
		}
		plan.Items = append(plan.Items, PrunedItem{EntryID: e.ID, Tokens: n, Saving: saving})
		plan.Saving += saving
	}
	planThinking(path, from, s.Thinking, &plan)
	if plan.Saving < s.Minimum {
		return PrunePlan{}
	}
	return plan
}

// contextStart is the first path index whose entry is in the context: the
// last compaction's first kept entry, else 0. Earlier results are no
// longer sent, so pruning them saves nothing.
func contextStart(path []*session.Entry) int {
	for i := len(path) - 1; i >= 0; i-- {
		if path[i].Type != session.TypeCompaction {
			continue
		}
		if j := indexByID(path, path[i].Get("firstKeptEntryId").String(), i); j >= 0 {
			return j
		}
		return i + 1
	}
	return 0
}

// ArchiveSuffix names the sidecar archive of a session file's pruned
// originals: FILE + ArchiveSuffix, next to the session (a link's target);
// the archive of a name too long for that is named by a cut of it and a
// hash (session.SideName). The name is the file layout's
// (session.ArchiveSuffix), which listings of sessions know too.
const ArchiveSuffix = session.ArchiveSuffix

// ArchivePath is the sidecar archive of a session file's pruned outputs.
func ArchivePath(sessionPath string) string {
	dir, base := filepath.Split(sessionPath)
	return dir + session.SideName("", base, ArchiveSuffix)
}

// DropDuplicateIDs removes from plan the entries whose id is not unique in
// file: which of them a record belongs to could not be told by id, and pi
// resolves the id to only one of them. If what is left saves less than
// minimum, the plan is empty.
func DropDuplicateIDs(plan PrunePlan, file *session.File, minimum int) PrunePlan {
	dup := duplicateIDs(file)
	if len(dup) == 0 {
		return plan
	}
	var out PrunePlan
	for _, it := range plan.Items {
		if !dup[it.EntryID] {
			out.Items = append(out.Items, it)
			out.Saving += it.Saving
		}
	}
	if out.Saving < minimum || len(out.Items) == 0 {
		return PrunePlan{}
	}
	return out
}

func duplicateIDs(file *session.File) map[string]bool {
	seen := make(map[string]bool, len(file.Entries))
	var dup map[string]bool
	for _, e := range file.Entries {
		if seen[e.ID] {
			if dup == nil {
				dup = map[string]bool{}
			}
			dup[e.ID] = true
		}
		seen[e.ID] = true
	}
	return dup
}

// ApplyPrune returns a copy of file in which the plan's tool results carry
// the notice instead of their content and a prunedAt stamp (milliseconds),
// every other byte of their lines unchanged, and the archive records that
// keep the originals (see ArchiveRecord). Entries whose id is not unique
// in the file are never pruned.
func ApplyPrune(file *session.File, plan PrunePlan, now time.Time) (*session.File, []byte, error) {
	if len(plan.Items) == 0 {
		return file, nil, nil
	}
	want := make(map[string]PrunedItem, len(plan.Items))
	for _, it := range plan.Items {
		want[it.EntryID] = it
	}
	dup := duplicateIDs(file)
	stamp := now.UnixMilli()
	out := *file
	out.Entries = slices.Clone(file.Entries)
	var archive bytes.Buffer
	size := 0
	for _, e := range out.Entries {
		if _, ok := want[e.ID]; ok {
			size += len(e.Raw) + len(e.ID) + 200
		}
	}
	archive.Grow(size) // the originals can be most of a large session: grow once
	for i, e := range out.Entries {
		it, ok := want[e.ID]
		if !ok || e.Type != session.TypeMessage || dup[e.ID] {
			continue
		}
		delete(want, e.ID)
		content := e.Get("message.content")
		var notice []byte
		switch {
		case it.Thinking:
			notice = withoutThinking(content)
		case content.Type == gjson.String:
			notice = []byte(strconv.Quote(PruneNotice(it.Tokens)))
		default:
			notice = []byte(`[{"type":"text","text":` + strconv.Quote(PruneNotice(it.Tokens)) + `}]`)
		}
		line, err := sjson.SetRawBytes(e.Raw, "message.content", notice)
		if err == nil {
			line, err = sjson.SetBytes(line, "message.prunedAt", stamp)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("prune entry %s (line %d): %w", e.ID, e.Line, err)
		}
		ne, err := session.ParseEntry(line)
		if err != nil {
			return nil, nil, fmt.Errorf("prune entry %s (line %d): %w", e.ID, e.Line, err)
		}
		ne.Line = e.Line
		out.Entries[i] = ne
		ArchiveRecord{Pos: i, ID: e.ID, Field: "message.content", PrunedAt: stamp, Original: e.Raw}.writeTo(&archive)
	}
	for id := range want {
		if dup[id] {
			continue
		}
		return nil, nil, fmt.Errorf("prune: no tool result with id %q in the session", id)
	}
	return &out, archive.Bytes(), nil
}

// Prune plans and applies pruning in one change of the session under its
// lock: the archive's torn tail (a crash mid-append) is cut off, the
// originals not archived yet are appended all or nothing, then the
// session is rewritten; if the rewrite fails, the archive is cut back. It
// returns the plan it applied (empty: nothing was worth pruning).
func Prune(store session.Backend, s PruneSettings, now time.Time) (PrunePlan, error) {
	var applied PrunePlan
	err := store.Update(func(tx *session.Tx) (*session.File, error) {
		plan := PlanPrune(tx.Tree().Path(tx.Leaf()), s)
		plan = DropDuplicateIDs(plan, tx.File(), s.Minimum)
		if len(plan.Items) == 0 {
			return nil, nil
		}
		out, records, err := ApplyPrune(tx.File(), plan, now)
		if err != nil {
			return nil, err
		}
		arch, err := tx.ReadSidecar(ArchiveSuffix)
		if err != nil {
			return nil, err
		}
		if cut := completeRecords(arch); cut < len(arch) {
			if err := tx.TruncateSidecar(ArchiveSuffix, int64(cut)); err != nil {
				return nil, err
			}
			arch = arch[:cut]
		}
		if fresh := newRecords(arch, records); len(fresh) > 0 {
			if err := tx.AppendSidecar(ArchiveSuffix, fresh); err != nil {
				return nil, fmt.Errorf("prune: %w", err)
			}
		}
		applied = plan
		return out, nil
	})
	if err != nil {
		return PrunePlan{}, err
	}
	return applied, nil
}

// completeRecords is the length of the archive up to its last newline: a
// record after it was torn by a crash or a full disk mid-append, before
// the session was rewritten, so dropping it loses nothing.
func completeRecords(arch []byte) int { return bytes.LastIndexByte(arch, '\n') + 1 }

// newRecords drops the records whose original (position and hash) the
// archive holds already: a prune whose rewrite failed, or one after a
// restore, does not archive the same original again.
func newRecords(arch, records []byte) []byte {
	have := map[string]bool{}
	for _, l := range bytes.Split(arch, []byte("\n")) {
		if r, err := ParseArchiveRecord(l); err == nil {
			have[r.key()] = true
		}
	}
	if len(have) == 0 {
		// The usual first prune: every record is new, and checking each
		// would hash and copy every original once more.
		return records
	}
	out := make([]byte, 0, len(records))
	for _, l := range bytes.SplitAfter(records, []byte("\n")) {
		if len(l) == 0 {
			continue
		}
		r, err := ParseArchiveRecord(bytes.TrimSuffix(l, []byte("\n")))
		if err == nil && have[r.key()] {
			continue
		}
		out = append(out, l...)
	}
	return out
}
