package branch

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/store/files"
)

// TestNavigateLabelMatchesPi runs the cases of
// testdata/golden/pi-navigate-label.json, made by conformance/label.mjs
// from pi 0.73.1's own AgentSession.navigateTree on the demo session, and
// compares where the label entry lands: on the branch summary when one is
// written (hanging from it), else on the target (hanging from the new
// position).
func TestNavigateLabelMatchesPi(t *testing.T) {
	data, err := os.ReadFile("testdata/golden/pi-navigate-label.json")
	if err != nil {
		t.Fatal(err)
	}
	type labelEntry struct {
		Label    string `json:"label"`
		TargetID string `json:"targetId"`
		ParentID string `json:"parentId"`
	}
	var golden struct {
		Cases []struct {
			Case      string  `json:"case"`
			TargetID  string  `json:"targetId"`
			Summarize bool    `json:"summarize"`
			Label     *string `json:"label"`
			Answer    *struct {
				Summary *struct {
					Summary string `json:"summary"`
				} `json:"summary"`
				Label *string `json:"label"`
			} `json:"answer"`
			SummaryWritten bool        `json:"summaryWritten"`
			LabelEntry     *labelEntry `json:"labelEntry"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(data, &golden); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("../../examples/demo-session.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range golden.Cases {
		t.Run(c.Case, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "s.jsonl")
			if err := os.WriteFile(path, src, 0o644); err != nil {
				t.Fatal(err)
			}
			store, err := files.Open(path, files.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			target := store.Tree().Get(c.TargetID)
			position := c.TargetID
			if target.Type == session.TypeMessage && target.Role() == session.RoleUser {
				position = target.ParentID
			}
			opts := NavigateOptions{Summarize: c.Summarize, BeforeTree: func(context.Context, BeforeTreeEvent) (BeforeTreeResult, error) {
				var r BeforeTreeResult
				if c.Answer != nil {
					if c.Answer.Summary != nil {
						r.Summary = &SuppliedSummary{Summary: c.Answer.Summary.Summary}
					}
					r.Label = c.Answer.Label
				}
				return r, nil
			}}
			if c.Label != nil {
				opts.Label = *c.Label
			}
			res, err := Navigate(context.Background(), store, c.TargetID, opts)
			if err != nil {
				t.Fatal(err)
			}
			if got := res.SummaryEntry != nil; got != c.SummaryWritten {
				t.Fatalf("summary written %v, pi %v", got, c.SummaryWritten)
			}
			rel := func(id string) string {
				switch {
				case id == "":
					return "root"
				case res.SummaryEntry != nil && id == res.SummaryEntry.ID:
					return "summary"
				case id == c.TargetID:
					return "target"
				case id == position:
					return "position"
				}
				return id
			}
			var got *labelEntry
			if e := res.LabelEntry; e != nil {
				got = &labelEntry{Label: e.Get("label").String(), TargetID: rel(e.Get("targetId").String()), ParentID: rel(e.ParentID)}
			}
			if (got == nil) != (c.LabelEntry == nil) || got != nil && *got != *c.LabelEntry {
				t.Errorf("label entry %+v, pi %+v", got, c.LabelEntry)
			}
		})
	}
}
