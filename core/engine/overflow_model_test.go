package engine

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/pith-dev/pith/core/session"
)

// TestOverflowFromAnotherModelNotRecovered: after the user switched to
// another model (a model_change entry), an overflow error from the old
// model — a request still in flight when the switch came — says nothing
// about the new model's context: it is recorded, not compacted away (pi
// compares the failed message's provider and model with the session's).
// An overflow from the current model still is.
func TestOverflowFromAnotherModelNotRecovered(t *testing.T) {
	ctx := context.Background()
	store, path := newSession(t, 12)
	s := New(store, Options{Settings: testSettings(), Summarizer: newScript()})
	if _, err := s.AppendEntries(ctx, session.Draft{Type: session.TypeModelChange,
		Fields: json.RawMessage(`{"provider":"test","modelId":"big"}`)}); err != nil {
		t.Fatal(err)
	}
	out, err := s.HandleAssistantError(ctx, errorMsg(overflowText)) // model m1
	if err != nil {
		t.Fatal(err)
	}
	if out.Overflow || out.Compaction != nil || out.Action != ActionNone {
		t.Fatalf("an old model's overflow was recovered: %+v", out)
	}
	if n := len(compactions(t, path)); n != 0 {
		t.Fatalf("%d compactions", n)
	}
	fromBig := json.RawMessage(strings.Replace(string(errorMsg(overflowText)), `"model":"m1"`, `"model":"big"`, 1))
	if _, err := s.AppendMessages(ctx, userMsg("again")); err != nil {
		t.Fatal(err)
	}
	out, err = s.HandleAssistantError(ctx, fromBig)
	if err != nil {
		t.Fatal(err)
	}
	if !out.Overflow || out.Compaction == nil || out.Action != ActionRetry {
		t.Fatalf("the current model's overflow was not recovered: %+v", out)
	}
}
