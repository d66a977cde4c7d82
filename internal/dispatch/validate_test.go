package dispatch_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/pith-dev/pith/hooks"
	"github.com/pith-dev/pith/internal/dispatch"
)

func TestEstimateText(t *testing.T) {
	tests := []struct {
		in   string
		want int
	}{
		{"", 0},
		{"abcd", 1},
		{"abcde", 2},
		{"😀😀", 1},  // two surrogate pairs: four UTF-16 units
		{"ééé", 1}, // one unit each
		{strings.Repeat("x", 4000), 1000},
	}
	for _, tt := range tests {
		if got := dispatch.EstimateText(tt.in); got != tt.want {
			t.Errorf("EstimateText(%q) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

func TestValidate(t *testing.T) {
	ok := hooks.Compaction{Summary: "s", FirstKeptEntryID: "e1"}
	with := func(f func(*hooks.Compaction)) *hooks.Compaction { c := ok; f(&c); return &c }
	tests := []struct {
		name string
		c    *hooks.Compaction
		lim  hooks.CompactionLimits
		want string // "" = valid
	}{
		{"valid without limits", &ok, hooks.CompactionLimits{}, ""},
		{"nil", nil, hooks.CompactionLimits{}, "no compaction"},
		{"blank summary", with(func(c *hooks.Compaction) { c.Summary = "\n\t " }), hooks.CompactionLimits{}, "summary is empty"},
		{"over the cap", with(func(c *hooks.Compaction) { c.Summary = "12345678" }), hooks.CompactionLimits{MaxSummaryTokens: 1}, "over the cap of 1"},
		{"custom estimator", with(func(c *hooks.Compaction) { c.Summary = "x" }), hooks.CompactionLimits{MaxSummaryTokens: 5, EstimateTokens: func(string) int { return 6 }}, "~6 tokens"},
		{"first kept not allowed", &ok, hooks.CompactionLimits{AllowedFirstKeptIDs: []string{}}, `"e1" is not an entry`},
		{"first kept allowed", &ok, hooks.CompactionLimits{AllowedFirstKeptIDs: []string{"e0", "e1"}}, ""},
		{"negative tokensBefore", with(func(c *hooks.Compaction) { c.TokensBefore = -1 }), hooks.CompactionLimits{}, "negative"},
		{"bad preserveData", with(func(c *hooks.Compaction) { c.PreserveData = json.RawMessage("{") }), hooks.CompactionLimits{}, "preserveData is not valid JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := dispatch.ValidateCompaction(tt.c, tt.lim)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("unexpected %v", err)
				}
				return
			}
			if !errors.Is(err, hooks.ErrInvalidResult) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want ErrInvalidResult with %q", err, tt.want)
			}
		})
	}
	if err := dispatch.ValidateSummary(&hooks.BranchSummary{Summary: "ok", Details: json.RawMessage("nope")}, hooks.SummaryLimits{}); !errors.Is(err, hooks.ErrInvalidResult) {
		t.Fatalf("bad details accepted: %v", err)
	}
}
