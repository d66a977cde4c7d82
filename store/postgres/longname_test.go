package postgres_test

import (
	"context"
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
