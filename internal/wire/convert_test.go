package wire_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/pith-dev/pith/hooks"
	pb "github.com/pith-dev/pith/internal/gen/pith/hooks/v1"
	"github.com/pith-dev/pith/internal/wire"
	"google.golang.org/protobuf/proto"
)

// roundTrip marshals m to bytes and back, as the wire does.
func roundTrip[M proto.Message](t *testing.T, m M) M {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	out := m.ProtoReflect().New().Interface().(M)
	if err := proto.Unmarshal(b, out); err != nil {
		t.Fatal(err)
	}
	return out
}

func raws(s ...string) []json.RawMessage {
	var out []json.RawMessage
	for _, x := range s {
		out = append(out, json.RawMessage(x))
	}
	return out
}

func TestEventsRoundTrip(t *testing.T) {
	// Unknown fields and odd spacing must survive byte for byte.
	msg := `{"role":"user","content":"hi","x-unknown": [1, 2]}`
	bce := &hooks.BeforeCompactEvent{
		SessionID: "s1",
		Preparation: hooks.Preparation{
			FirstKeptEntryID: "e9", IsSplitTurn: true, TokensBefore: 123456,
			MessagesToSummarize: raws(msg), TurnPrefixMessages: raws(`{"role":"assistant"}`),
			PreviousSummary: "before", ReadFiles: []string{"a.go"}, ModifiedFiles: []string{"b.go"},
			KeepRecentTokens: 20000, ReserveTokens: 16384,
		},
		PathEntries:        raws(`{"type":"message","id":"e1"}`, `{"type":"label","id":"e2"}`),
		CustomInstructions: "focus", Reason: hooks.ReasonOverflow, WillRetry: true,
		Labels: []hooks.Label{{EntryID: "e1", Label: "no-compact"}},
	}
	if got := wire.BeforeCompactEventFromProto(roundTrip(t, wire.BeforeCompactEventToProto(bce))); !reflect.DeepEqual(got, bce) {
		t.Errorf("before_compact: got %+v, want %+v", got, bce)
	}
	ce := &hooks.CompactingEvent{SessionID: "s", Messages: raws(msg), TurnPrefixMessages: raws(msg), Reason: hooks.ReasonThreshold,
		FirstKeptEntryID: "k", IsSplitTurn: true, TokensBefore: 9, ReadFiles: []string{"r.go"}, ModifiedFiles: []string{"m.go"}}
	if got := wire.CompactingEventFromProto(roundTrip(t, wire.CompactingEventToProto(ce))); !reflect.DeepEqual(got, ce) {
		t.Errorf("compacting: got %+v", got)
	}
	cpe := &hooks.CompactEvent{SessionID: "s", CompactionEntry: json.RawMessage(msg), FromExtension: true}
	if got := wire.CompactEventFromProto(roundTrip(t, wire.CompactEventToProto(cpe))); !reflect.DeepEqual(got, cpe) {
		t.Errorf("compact: got %+v", got)
	}
	bte := &hooks.BeforeTreeEvent{SessionID: "s", TargetID: "t", OldLeafID: "o", CommonAncestorID: "c", EntriesToSummarize: raws(msg), UserWantsSummary: true, CustomInstructions: "i", Label: "l"}
	if got := wire.BeforeTreeEventFromProto(roundTrip(t, wire.BeforeTreeEventToProto(bte))); !reflect.DeepEqual(got, bte) {
		t.Errorf("before_tree: got %+v", got)
	}
	te := &hooks.TreeEvent{SessionID: "s", NewLeafID: "n", OldLeafID: "o", SummaryEntry: json.RawMessage(msg), FromExtension: true}
	if got := wire.TreeEventFromProto(roundTrip(t, wire.TreeEventToProto(te))); !reflect.DeepEqual(got, te) {
		t.Errorf("tree: got %+v", got)
	}
}

func TestResultsRoundTrip(t *testing.T) {
	bcr := []*hooks.BeforeCompactResult{
		nil,
		{Cancel: true, CancelReason: "no"},
		{Compaction: &hooks.Compaction{Summary: "s", ShortSummary: "ss", FirstKeptEntryID: "e", TokensBefore: 9, Details: json.RawMessage(`{"a":1}`), PreserveData: json.RawMessage(`[]`)}},
	}
	for _, r := range bcr {
		if got := wire.BeforeCompactResultFromProto(roundTrip(t, wire.BeforeCompactResultToProto(r))); !reflect.DeepEqual(got, r) {
			t.Errorf("before_compact result: got %+v, want %+v", got, r)
		}
	}
	cr := []*hooks.CompactingResult{nil, {Context: []string{"a", "b"}, Prompt: "p", PreserveData: json.RawMessage(`{"x":true}`)}}
	for _, r := range cr {
		if got := wire.CompactingResultFromProto(roundTrip(t, wire.CompactingResultToProto(r))); !reflect.DeepEqual(got, r) {
			t.Errorf("compacting result: got %+v, want %+v", got, r)
		}
	}
	btr := []*hooks.BeforeTreeResult{
		nil,
		{Cancel: true, CancelReason: "r", Label: "l"},
		{Summary: &hooks.BranchSummary{Summary: "s", Details: json.RawMessage(`1`)}, CustomInstructions: "c", ReplaceInstructions: true},
	}
	for _, r := range btr {
		if got := wire.BeforeTreeResultFromProto(roundTrip(t, wire.BeforeTreeResultToProto(r))); !reflect.DeepEqual(got, r) {
			t.Errorf("before_tree result: got %+v, want %+v", got, r)
		}
	}
}

func TestEventsFromStrings(t *testing.T) {
	known, unknown := wire.EventsFromStrings([]string{"session_compact", "session_future", "session_tree"})
	if !reflect.DeepEqual(known, []hooks.EventID{hooks.EventCompact, hooks.EventTree}) || !reflect.DeepEqual(unknown, []string{"session_future"}) {
		t.Fatalf("known %v unknown %v", known, unknown)
	}
	if got := wire.LogLevelFromProto(pb.LogLevel_LOG_LEVEL_UNSPECIFIED); got.String() != "info" {
		t.Fatalf("unspecified level = %v", got)
	}
}
