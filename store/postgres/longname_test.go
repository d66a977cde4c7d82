package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pith-dev/pith/core/compaction"
	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/internal/pgtest"
	"github.com/pith-dev/pith/store"
	"github.com/pith-dev/pith/store/postgres"
	"github.com/pith-dev/pith/store/storetest"
)

// TestPruneLongName: a session whose name is as long as the grammar
// allows (a 255-byte last part) is pruned and restored like any other.
// Its archive is a row keyed by the session and the suffix, never a file
// name, yet the suffix check refused the name and the suffix together
// as a name past 255 bytes: every prune of such a session failed, the
// automatic one at every turn.
func TestPruneLongName(t *testing.T) {
	url := pgtest.NewDatabase(t)
	ctx := context.Background()
	s, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	name := "tenant/" + strings.Repeat("n", 255-len(".jsonl")) + ".jsonl"
	if err := store.CheckName(name); err != nil {
		t.Fatal(err)
	}
	if err := s.Create(ctx, name, []byte(storetest.Sample)); err != nil {
		t.Fatal(err)
	}
	h, err := store.OpenSession(ctx, s, name, store.SessionOptions{Holder: "A"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		m := map[string]any{"role": "toolResult", "toolCallId": fmt.Sprint("c", i), "toolName": "bash",
			"content": []any{map[string]any{"type": "text", "text": strings.Repeat(fmt.Sprintf("output %d\n", i), 1000)}}, "isError": false, "timestamp": 1}
		if _, err := h.Append(session.Draft{Type: session.TypeMessage, Fields: map[string]any{"message": m}}); err != nil {
			t.Fatal(err)
		}
	}
	before, err := s.Export(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := compaction.Prune(h, compaction.PruneSettings{Protect: 4000, Minimum: 100}, time.UnixMilli(1700000000000))
	if err != nil || len(plan.Items) == 0 {
		t.Fatalf("prune of a session with a long name: %d items, %v", len(plan.Items), err)
	}
	if res, err := compaction.Restore(h); err != nil || res.Restored != len(plan.Items) {
		t.Fatalf("restore: %+v, %v", res, err)
	}
	if after, err := s.Export(ctx, name); err != nil || string(after) != string(before) {
		t.Fatalf("restore did not give the session back byte for byte (%v)", err)
	}
}

// TestImportLongID: an entry whose id is longer than a btree index row
// may be (2704 bytes; a random one does not compress) is stored like any
// other line — the files store keeps such a file — and appended to.
func TestImportLongID(t *testing.T) {
	url := pgtest.NewDatabase(t)
	ctx := context.Background()
	s, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b := make([]byte, 2000)
	rand.Read(b)
	id := hex.EncodeToString(b)
	data := storetest.Sample + `{"type":"message","id":"` + id + `","parentId":"aaaa0002","timestamp":"2026-01-01T00:00:03.000Z","message":{"role":"user","content":"long id","timestamp":3}}` + "\n"
	if err := s.Create(ctx, "long-id.jsonl", []byte(data)); err != nil {
		t.Fatalf("import of an entry with a %d-byte id: %v", len(id), err)
	}
	if got, err := s.Export(ctx, "long-id.jsonl"); err != nil || string(got) != data {
		t.Fatalf("export: %v", err)
	}
	es, err := s.Append(ctx, "long-id.jsonl", id, session.Draft{Type: session.TypeMessage, Fields: map[string]any{"message": map[string]any{"role": "user", "content": "after", "timestamp": 4}}})
	if err != nil || es[0].ParentID != id {
		t.Fatalf("append below the long id: %v", err)
	}
}
