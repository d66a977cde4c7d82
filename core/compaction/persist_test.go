package compaction

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/core/summary"
	"github.com/pith-dev/pith/store/files"
	"github.com/tidwall/gjson"
)

func TestPersist(t *testing.T) {
	b := &builder{}
	b.user(100)
	b.assistant(100, `c1:write:{"path":"/w.go"}`)
	b.result("c1", "write", 1)
	u2 := b.user(100)
	b.assistant(100)
	p := filepath.Join(t.TempDir(), "s.jsonl")
	if err := os.WriteFile(p, b.data(), 0o644); err != nil {
		t.Fatal(err)
	}
	store, err := files.Open(p, files.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	prep, err := Prepare(store.Tree().Path(store.Leaf()), Settings{ReserveTokens: 1000, KeepRecentTokens: 150})
	if err != nil {
		t.Fatal(err)
	}
	res := &Result{Summary: "SUM", ShortSummary: "short", FirstKeptEntryID: prep.FirstKeptEntryID,
		TokensBefore: prep.TokensBefore, Details: Details{ReadFiles: []string{}, ModifiedFiles: prep.ModifiedFiles}}
	e, ctx, err := Persist(store, prep, res, false, []byte(`{"audit":{"n":1}}`))
	if err != nil {
		t.Fatal(err)
	}
	line := string(e.Raw)
	for _, want := range []string{`"type":"compaction"`, `"summary":"SUM","shortSummary":"short","firstKeptEntryId":"` + u2 + `","tokensBefore":`,
		`"details":{"readFiles":[],"modifiedFiles":["/w.go"]},"preserveData":{"audit":{"n":1}}}`} {
		if !strings.Contains(line, want) {
			t.Fatalf("entry %s lacks %s", line, want)
		}
	}
	if gjson.Get(line, "fromHook").Exists() {
		t.Fatal("fromHook written for a built-in compaction")
	}
	if len(ctx.Messages) != 3 || ctx.Messages[0].Role != session.RoleCompactionSummary || ctx.Messages[1].EntryID != u2 {
		t.Fatalf("context after compaction: %d messages", len(ctx.Messages))
	}
	// Compacting again right away: nothing to do.
	if _, err := Prepare(store.Tree().Path(store.Leaf()), DefaultSettings()); err == nil {
		t.Fatal("prepared a compaction right after one")
	}
	// The leaf moved on since prep was made: refuse.
	if _, _, err := Persist(store, prep, res, true, nil); !errors.Is(err, ErrDiscarded) {
		t.Fatalf("err = %v", err)
	}
}

func TestCompactionDraftFromHook(t *testing.T) {
	d := CompactionDraft(&Result{Summary: "S", FirstKeptEntryID: "abc", RawDetails: []byte(`{"custom":true}`)}, true, nil)
	line, err := jsonOf(d.Fields)
	if err != nil {
		t.Fatal(err)
	}
	if line != `{"summary":"S","firstKeptEntryId":"abc","tokensBefore":0,"details":{"custom":true},"fromHook":true}` {
		t.Fatalf("fields %s", line)
	}
}

func TestValidateSupplied(t *testing.T) {
	b := &builder{}
	u1 := b.user(100)
	b.assistant(100)
	u2 := b.user(100)
	b.compaction(u2, "s", "")
	u3 := b.user(100)
	b.assistant(100)
	path := b.path(t)
	prep, err := Prepare(path, Settings{ReserveTokens: 100, KeepRecentTokens: 50})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, summary, kept string
		ok                  bool
	}{
		{"valid", "## Goal\nx", u3, true},
		{"kept entry is the range start", "## Goal\nx", u2, true},
		{"empty", " ", u3, false},
		{"over the cap", text(81), u3, false},
		{"kept entry before the range", "## Goal\nx", u1, false},
		{"kept entry not on the path", "## Goal\nx", "ffffffff", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateSupplied(path, prep, tt.summary, tt.kept)
			if (err == nil) != tt.ok || (err != nil && !errors.Is(err, summary.ErrInvalidSummary)) {
				t.Fatalf("err = %v", err)
			}
		})
	}
}
