package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/pith-dev/pith/hooks"
	"github.com/pith-dev/pith/sdk/sdktest"
)

// TestEveryFieldCrossesToAPlugin sends each event with every field set to
// the echo plugin in its own process and checks that the plugin received
// exactly what was sent, and the host exactly what it answered: a field
// missing from the proto or its conversions shows up here.
func TestEveryFieldCrossesToAPlugin(t *testing.T) {
	record := filepath.Join(t.TempDir(), "events")
	h := sdktest.Subprocess(t, sdktest.Build(t, "."), sdktest.WithArgs("-record", record))
	ctx := context.Background()
	var sent []string
	want := func(id hooks.EventID, ev any) {
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		sent = append(sent, string(id)+" "+string(b))
	}
	answered := func(id hooks.EventID, got, want any, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: the plugin answered %+v, the host got %+v", id, want, got)
		}
	}

	bce := filled[hooks.BeforeCompactEvent]()
	want(hooks.EventBeforeCompact, bce)
	bcr, err := h.BeforeCompact(ctx, bce)
	wantBCR := filled[hooks.BeforeCompactResult]()
	wantBCR.Cancel, wantBCR.CancelReason = false, ""
	answered(hooks.EventBeforeCompact, bcr, wantBCR, err)

	ce := filled[hooks.CompactingEvent]()
	want(hooks.EventCompacting, ce)
	cr, err := h.Compacting(ctx, ce)
	answered(hooks.EventCompacting, cr, filled[hooks.CompactingResult](), err)

	cpe := filled[hooks.CompactEvent]()
	want(hooks.EventCompact, cpe)
	if err := h.Compact(ctx, cpe); err != nil {
		t.Fatal(err)
	}

	bte := filled[hooks.BeforeTreeEvent]()
	want(hooks.EventBeforeTree, bte)
	btr, err := h.BeforeTree(ctx, bte)
	answered(hooks.EventBeforeTree, btr, filled[hooks.BeforeTreeResult](), err)

	te := filled[hooks.TreeEvent]()
	want(hooks.EventTree, te)
	if err := h.Tree(ctx, te); err != nil {
		t.Fatal(err)
	}

	b, err := os.ReadFile(record)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(got) != len(sent) {
		t.Fatalf("the plugin recorded %d events, %d were sent", len(got), len(sent))
	}
	for i := range sent {
		if got[i] != sent[i] {
			t.Errorf("sent     %s\nreceived %s", sent[i], got[i])
		}
	}
}
