package wire_test

import (
	"encoding/hex"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pith-dev/pith/hooks"
	"github.com/pith-dev/pith/internal/wire"
	"google.golang.org/protobuf/proto"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// TestWireGolden pins the binary encoding of every event and result: a
// renumbered or retyped field breaks published plugins, and shows up here
// as a diff rather than at a user's site. Regenerate deliberately with
// `go test ./internal/wire -run Golden -update`.
func TestWireGolden(t *testing.T) {
	for name, m := range goldenCases() {
		t.Run(name, func(t *testing.T) {
			b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			got := wrap(hex.EncodeToString(b))
			path := filepath.Join("testdata", name+".hex")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got != string(want) {
				t.Fatalf("wire encoding of %s changed:\ngot\n%s\nwant\n%s", name, got, want)
			}
		})
	}
}

// goldenCases are the messages whose encoding testdata/<name>.hex pins.
func goldenCases() map[string]proto.Message {
	msg := json.RawMessage(`{"role":"user","content":"hi"}`)
	return map[string]proto.Message{
		"before_compact_request": wire.BeforeCompactEventToProto(&hooks.BeforeCompactEvent{
			SessionID: "s1",
			Preparation: hooks.Preparation{FirstKeptEntryID: "e9", IsSplitTurn: true, TokensBefore: 1234,
				MessagesToSummarize: []json.RawMessage{msg}, TurnPrefixMessages: []json.RawMessage{msg},
				PreviousSummary: "prev", ReadFiles: []string{"a"}, ModifiedFiles: []string{"b"}, KeepRecentTokens: 20000, ReserveTokens: 16384},
			PathEntries: []json.RawMessage{msg}, CustomInstructions: "ci", Reason: hooks.ReasonOverflow, WillRetry: true,
			Labels: []hooks.Label{{EntryID: "e1", Label: "no-compact"}},
		}),
		"before_compact_response_cancel": wire.BeforeCompactResultToProto(&hooks.BeforeCompactResult{Cancel: true, CancelReason: "r"}),
		"before_compact_response_compaction": wire.BeforeCompactResultToProto(&hooks.BeforeCompactResult{Compaction: &hooks.Compaction{
			Summary: "s", ShortSummary: "ss", FirstKeptEntryID: "e9", TokensBefore: 7, Details: json.RawMessage(`{}`), PreserveData: json.RawMessage(`[]`)}}),
		"compacting_request":   wire.CompactingEventToProto(&hooks.CompactingEvent{SessionID: "s1", Messages: []json.RawMessage{msg}, TurnPrefixMessages: []json.RawMessage{msg}, Reason: hooks.ReasonManual}),
		"compacting_response":  wire.CompactingResultToProto(&hooks.CompactingResult{Context: []string{"c"}, Prompt: "p", PreserveData: json.RawMessage(`1`)}),
		"compact_request":      wire.CompactEventToProto(&hooks.CompactEvent{SessionID: "s1", CompactionEntry: msg, FromExtension: true}),
		"before_tree_request":  wire.BeforeTreeEventToProto(&hooks.BeforeTreeEvent{SessionID: "s1", TargetID: "t", OldLeafID: "o", CommonAncestorID: "c", EntriesToSummarize: []json.RawMessage{msg}, UserWantsSummary: true, CustomInstructions: "i", Label: "l"}),
		"before_tree_response": wire.BeforeTreeResultToProto(&hooks.BeforeTreeResult{Cancel: true, CancelReason: "r", Summary: &hooks.BranchSummary{Summary: "s", Details: json.RawMessage(`{}`)}, CustomInstructions: "i", ReplaceInstructions: true, Label: "l"}),
		"tree_request":         wire.TreeEventToProto(&hooks.TreeEvent{SessionID: "s1", NewLeafID: "n", OldLeafID: "o", SummaryEntry: msg, FromExtension: true}),
	}
}

func wrap(s string) string {
	var b strings.Builder
	for len(s) > 64 {
		b.WriteString(s[:64] + "\n")
		s = s[64:]
	}
	b.WriteString(s + "\n")
	return b.String()
}
