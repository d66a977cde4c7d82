package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/pith-dev/pith/core/session"
	"github.com/tidwall/sjson"
)

// TestProposeIsTheSavedCompaction: a proposal on a read-only snapshot is
// the compaction Compact then saves on the same file — summary, cut,
// tokens and details (but the mark that Pith made it) — and writing it
// is left to the owner: the snapshot refuses every write, the file's
// bytes are unchanged.
func TestProposeIsTheSavedCompaction(t *testing.T) {
	ctx := context.Background()
	store, path := newSession(t, 12)
	before := readFile(t, path)
	f, err := session.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	snap := session.NewSnapshot(path, f)
	p, err := New(snap, Options{Settings: testSettings(), Summarizer: newScript()}).ProposeCompaction(ctx, ProposeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(readFile(t, path), before) {
		t.Fatal("the proposal wrote to the file")
	}
	if _, err := snap.Append(session.Draft{Type: session.TypeCustom, Fields: map[string]any{"customType": "x"}}); !errors.Is(err, session.ErrReadOnly) {
		t.Fatalf("a snapshot took a write: %v", err)
	}

	res, err := New(store, Options{Settings: testSettings(), Summarizer: newScript()}).Compact(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if p.Summary != res.Summary || p.FirstKeptEntryID != res.FirstKeptEntryID || p.TokensBefore != res.TokensBefore ||
		p.MessagesSummarized != res.MessagesSummarized || p.FromHook {
		t.Fatalf("proposal %+v\nsaved %+v", p, res)
	}
	unmarked, _ := sjson.DeleteBytes(p.Details, session.GeneratedByKey)
	if saved := res.Entry.Get("details").Raw; !jsonSame(t, unmarked, []byte(saved)) {
		t.Fatalf("details differ:\nproposal %s\nsaved    %s", unmarked, saved)
	}
}

func jsonSame(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y bytes.Buffer
	if err := json.Compact(&x, a); err != nil {
		t.Fatal(err)
	}
	if err := json.Compact(&y, b); err != nil {
		t.Fatal(err)
	}
	return x.String() == y.String()
}
