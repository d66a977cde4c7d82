package hooks_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/pith-dev/pith/hooks"
)

// The contract types as version 1 of the SDK published them, before they
// were generated from the proto. Plugins compiled against them must keep
// compiling and encoding the same: every field stays, in its place, with
// its type and JSON tag, in the same order (new fields may come between).

type v1Reason string

type v1Preparation struct {
	FirstKeptEntryID    string            `json:"firstKeptEntryId"`
	IsSplitTurn         bool              `json:"isSplitTurn"`
	TokensBefore        int               `json:"tokensBefore"`
	MessagesToSummarize []json.RawMessage `json:"messagesToSummarize"`
	TurnPrefixMessages  []json.RawMessage `json:"turnPrefixMessages"`
	PreviousSummary     string            `json:"previousSummary,omitempty"`
	ReadFiles           []string          `json:"readFiles"`
	ModifiedFiles       []string          `json:"modifiedFiles"`
	KeepRecentTokens    int               `json:"keepRecentTokens"`
	ReserveTokens       int               `json:"reserveTokens"`
	RangeStart          int               `json:"rangeStart"`
	MessagesTruncated   bool              `json:"messagesTruncated,omitempty"`
	MessagesTotal       int               `json:"messagesTotal,omitempty"`
	TurnPrefixTotal     int               `json:"turnPrefixTotal,omitempty"`
}

type v1Label struct {
	EntryID string `json:"entryId"`
	Label   string `json:"label"`
}

type v1BeforeCompactEvent struct {
	SessionID           string            `json:"sessionId"`
	Preparation         v1Preparation     `json:"preparation"`
	PathEntries         []json.RawMessage `json:"pathEntries"`
	CustomInstructions  string            `json:"customInstructions,omitempty"`
	Reason              v1Reason          `json:"reason"`
	WillRetry           bool              `json:"willRetry"`
	Labels              []v1Label         `json:"labels,omitempty"`
	LeafID              string            `json:"leafId,omitempty"`
	PathLength          int               `json:"pathLength,omitempty"`
	PathTruncated       bool              `json:"pathTruncated,omitempty"`
	LabelsTruncated     bool              `json:"labelsTruncated,omitempty"`
	PathSinceCompaction int               `json:"-"`
}

type v1Compaction struct {
	Summary          string          `json:"summary"`
	ShortSummary     string          `json:"shortSummary,omitempty"`
	FirstKeptEntryID string          `json:"firstKeptEntryId"`
	TokensBefore     int             `json:"tokensBefore"`
	Details          json.RawMessage `json:"details,omitempty"`
	PreserveData     json.RawMessage `json:"preserveData,omitempty"`
}

type v1BeforeCompactResult struct {
	Cancel       bool          `json:"cancel,omitempty"`
	CancelReason string        `json:"cancelReason,omitempty"`
	Compaction   *v1Compaction `json:"compaction,omitempty"`
}

type v1CompactingEvent struct {
	SessionID          string            `json:"sessionId"`
	Messages           []json.RawMessage `json:"messages"`
	TurnPrefixMessages []json.RawMessage `json:"turnPrefixMessages"`
	Reason             v1Reason          `json:"reason"`
	FirstKeptEntryID   string            `json:"firstKeptEntryId"`
	IsSplitTurn        bool              `json:"isSplitTurn"`
	TokensBefore       int               `json:"tokensBefore"`
	ReadFiles          []string          `json:"readFiles"`
	ModifiedFiles      []string          `json:"modifiedFiles"`
	Workspace          string            `json:"workspace,omitempty"`
}

type v1CompactingResult struct {
	Context      []string            `json:"context,omitempty"`
	Prompt       string              `json:"prompt,omitempty"`
	PreserveData json.RawMessage     `json:"preserveData,omitempty"`
	Messages     []v1InjectedMessage `json:"messages,omitempty"`
}

type v1InjectedMessage struct {
	Type    string `json:"type,omitempty"`
	Content string `json:"content"`
	Display bool   `json:"display,omitempty"`
}

type v1CompactEvent struct {
	SessionID       string          `json:"sessionId"`
	CompactionEntry json.RawMessage `json:"compactionEntry"`
	FromExtension   bool            `json:"fromExtension"`
}

type v1BeforeTreeEvent struct {
	SessionID          string            `json:"sessionId"`
	TargetID           string            `json:"targetId"`
	OldLeafID          string            `json:"oldLeafId,omitempty"`
	CommonAncestorID   string            `json:"commonAncestorId,omitempty"`
	EntriesToSummarize []json.RawMessage `json:"entriesToSummarize"`
	UserWantsSummary   bool              `json:"userWantsSummary"`
	CustomInstructions string            `json:"customInstructions,omitempty"`
	Label              string            `json:"label,omitempty"`
	EntriesTruncated   bool              `json:"entriesTruncated,omitempty"`
	EntriesTotal       int               `json:"entriesTotal,omitempty"`
}

type v1BranchSummary struct {
	Summary string          `json:"summary"`
	Details json.RawMessage `json:"details,omitempty"`
}

type v1BeforeTreeResult struct {
	Cancel              bool             `json:"cancel,omitempty"`
	CancelReason        string           `json:"cancelReason,omitempty"`
	Summary             *v1BranchSummary `json:"summary,omitempty"`
	CustomInstructions  string           `json:"customInstructions,omitempty"`
	ReplaceInstructions bool             `json:"replaceInstructions,omitempty"`
	Label               string           `json:"label,omitempty"`
}

type v1TreeEvent struct {
	SessionID     string          `json:"sessionId"`
	NewLeafID     string          `json:"newLeafId"`
	OldLeafID     string          `json:"oldLeafId,omitempty"`
	SummaryEntry  json.RawMessage `json:"summaryEntry,omitempty"`
	FromExtension bool            `json:"fromExtension"`
}

func TestContractKeepsV1Fields(t *testing.T) {
	pairs := map[string][2]any{
		"Preparation":         {v1Preparation{}, hooks.Preparation{}},
		"Label":               {v1Label{}, hooks.Label{}},
		"BeforeCompactEvent":  {v1BeforeCompactEvent{}, hooks.BeforeCompactEvent{}},
		"Compaction":          {v1Compaction{}, hooks.Compaction{}},
		"BeforeCompactResult": {v1BeforeCompactResult{}, hooks.BeforeCompactResult{}},
		"CompactingEvent":     {v1CompactingEvent{}, hooks.CompactingEvent{}},
		"CompactingResult":    {v1CompactingResult{}, hooks.CompactingResult{}},
		"InjectedMessage":     {v1InjectedMessage{}, hooks.InjectedMessage{}},
		"CompactEvent":        {v1CompactEvent{}, hooks.CompactEvent{}},
		"BeforeTreeEvent":     {v1BeforeTreeEvent{}, hooks.BeforeTreeEvent{}},
		"BranchSummary":       {v1BranchSummary{}, hooks.BranchSummary{}},
		"BeforeTreeResult":    {v1BeforeTreeResult{}, hooks.BeforeTreeResult{}},
		"TreeEvent":           {v1TreeEvent{}, hooks.TreeEvent{}},
	}
	for name, p := range pairs {
		old, cur := reflect.TypeOf(p[0]), reflect.TypeOf(p[1])
		last := -1
		for i := range old.NumField() {
			o := old.Field(i)
			c, ok := cur.FieldByName(o.Name)
			if !ok {
				t.Errorf("%s lost field %s", name, o.Name)
				continue
			}
			ot := strings.ReplaceAll(o.Type.String(), "hooks_test.v1", "hooks.")
			if ot != c.Type.String() || o.Tag != c.Tag {
				t.Errorf("%s.%s: v1 %s %s, now %s %s", name, o.Name, ot, o.Tag, c.Type, c.Tag)
			}
			if c.Index[0] < last {
				t.Errorf("%s.%s moved before a field that preceded it", name, o.Name)
			}
			last = c.Index[0]
		}
	}
	if len(pairs) != 13 {
		t.Fatal("a v1 type is missing from the list")
	}
}

func TestContractKeepsV1Values(t *testing.T) {
	if hooks.ReasonManual != "manual" || hooks.ReasonThreshold != "threshold" || hooks.ReasonOverflow != "overflow" {
		t.Error("reasons changed")
	}
	want := []hooks.EventID{"session_before_compact", "session.compacting", "session_compact", "session_before_tree", "session_tree"}
	if got := hooks.AllEvents(); !reflect.DeepEqual(got, want) {
		t.Errorf("AllEvents() = %v, want %v", got, want)
	}
	for _, id := range want {
		if !id.Valid() {
			t.Errorf("%s is not valid", id)
		}
	}
	if hooks.EventID("session_start").Valid() {
		t.Error("an unknown event is valid")
	}
	if hooks.EventBeforeCompact != want[0] || hooks.EventCompacting != want[1] || hooks.EventCompact != want[2] ||
		hooks.EventBeforeTree != want[3] || hooks.EventTree != want[4] {
		t.Error("event constants changed")
	}
}
