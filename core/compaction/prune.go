package compaction

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/core/tokens"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// PruneSettings are the tool-output pruning settings of SPEC §8.
type PruneSettings struct {
	// Protect is how many tokens of the newest tool output are never pruned.
	Protect int `json:"protect"`
	// Minimum is the least total saving worth a rewrite of the session.
	Minimum int `json:"minimum"`
	// ProtectedTools are tools whose results are never pruned.
	ProtectedTools []string `json:"protectedTools"`
}

// DefaultPruneSettings are the defaults of SPEC §8.
func DefaultPruneSettings() PruneSettings {
	return PruneSettings{Protect: 40000, Minimum: 20000, ProtectedTools: []string{"skill", "read"}}
}

// PrunedItem is one tool result to prune.
type PrunedItem struct {
	EntryID string
	// Tokens is the result's estimate; Saving what pruning it saves.
	Tokens int
	Saving int
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

// PlanPrune chooses tool results to prune on path (SPEC §8). It walks the
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
		raw := e.MessageRaw()
		n := tokens.Estimate(raw)
		seen += n
		if seen <= s.Protect {
			continue
		}
		saving := n - EstimateTextTokens(PruneNotice(n))
		if saving <= 0 {
			continue
		}
		plan.Items = append(plan.Items, PrunedItem{EntryID: e.ID, Tokens: n, Saving: saving})
		plan.Saving += saving
	}
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

// ArchivePath is the sidecar archive of a session file's pruned outputs.
func ArchivePath(sessionPath string) string { return sessionPath + ".pruned.jsonl" }

// ApplyPrune returns a copy of file in which the plan's tool results carry
// the notice instead of their content and a prunedAt stamp (milliseconds),
// every other byte of their lines unchanged. Before returning, it appends
// each original line to the archive at archivePath as
// {"id":…,"prunedAt":…,"entry":<the original line>} and fsyncs it, so
// nothing is lost even if the caller crashes before or after rewriting the
// session. The caller writes the returned File (session.Store.Rewrite).
func ApplyPrune(file *session.File, plan PrunePlan, archivePath string, now time.Time) (*session.File, error) {
	if len(plan.Items) == 0 {
		return file, nil
	}
	want := make(map[string]PrunedItem, len(plan.Items))
	for _, it := range plan.Items {
		want[it.EntryID] = it
	}
	stamp := now.UnixMilli()
	out := *file
	out.Entries = slices.Clone(file.Entries)
	var archive bytes.Buffer
	for i, e := range out.Entries {
		it, ok := want[e.ID]
		if !ok || e.Type != session.TypeMessage {
			continue
		}
		delete(want, e.ID)
		content := e.Get("message.content")
		var notice []byte
		if content.Type == gjson.String {
			notice = []byte(strconv.Quote(PruneNotice(it.Tokens)))
		} else {
			notice = []byte(`[{"type":"text","text":` + strconv.Quote(PruneNotice(it.Tokens)) + `}]`)
		}
		line, err := sjson.SetRawBytes(e.Raw, "message.content", notice)
		if err == nil {
			line, err = sjson.SetBytes(line, "message.prunedAt", stamp)
		}
		if err != nil {
			return nil, fmt.Errorf("prune entry %s (line %d): %w", e.ID, e.Line, err)
		}
		ne, err := session.ParseEntry(line)
		if err != nil {
			return nil, fmt.Errorf("prune entry %s (line %d): %w", e.ID, e.Line, err)
		}
		ne.Line = e.Line
		out.Entries[i] = ne
		archive.WriteString(`{"id":` + strconv.Quote(e.ID) + `,"prunedAt":` + strconv.FormatInt(stamp, 10) + `,"entry":`)
		archive.Write(e.Raw)
		archive.WriteString("}\n")
	}
	if len(want) > 0 {
		for id := range want {
			return nil, fmt.Errorf("prune: no tool result with id %q in the session", id)
		}
	}
	if err := appendSync(archivePath, archive.Bytes()); err != nil {
		return nil, fmt.Errorf("prune archive %s: %w", archivePath, err)
	}
	return &out, nil
}

// appendSync appends data in one write and fsyncs the file (and the
// directory when the file is new).
func appendSync(path string, data []byte) error {
	_, statErr := os.Stat(path)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if errors.Is(statErr, fs.ErrNotExist) {
		if d, err := os.Open(filepath.Dir(path)); err == nil {
			d.Sync()
			d.Close()
		}
	}
	return nil
}

// Restore returns a copy of file with every entry found in the archive at
// archivePath put back to its original line, byte for byte, and how many
// entries it restored. A missing archive restores nothing. Torn or
// malformed archive lines (a crash mid-append) are skipped.
func Restore(file *session.File, archivePath string) (*session.File, int, error) {
	data, err := os.ReadFile(archivePath)
	if errors.Is(err, fs.ErrNotExist) {
		return file, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("restore from %s: %w", archivePath, err)
	}
	originals := map[string][]byte{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, len(data)+1)
	for sc.Scan() {
		l := sc.Bytes()
		if !gjson.ValidBytes(l) {
			continue
		}
		r := gjson.ParseBytes(l)
		id, entry := r.Get("id").String(), r.Get("entry")
		if id == "" || !entry.IsObject() || entry.Get("id").String() != id {
			continue
		}
		// The first archived line of an id is the true original; a later
		// one can only repeat it (pruned again after a restore).
		if _, ok := originals[id]; !ok {
			originals[id] = []byte(entry.Raw)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, 0, fmt.Errorf("restore from %s: %w", archivePath, err)
	}
	out := *file
	out.Entries = slices.Clone(file.Entries)
	n := 0
	for i, e := range out.Entries {
		orig, ok := originals[e.ID]
		if !ok || bytes.Equal(orig, e.Raw) {
			continue
		}
		ne, err := session.ParseEntry(orig)
		if err != nil {
			return nil, 0, fmt.Errorf("restore entry %s from %s: %w", e.ID, archivePath, err)
		}
		ne.Line = e.Line
		out.Entries[i] = ne
		n++
	}
	return &out, n, nil
}
