package dispatch

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf16"

	"github.com/pith-dev/pith/hooks"
)

// EstimateText is docs/behaviour.md §3's estimate for plain text: UTF-16
// code units / 4, rounded up. It is core/tokens' EstimateText written
// again: the SDK imports this package and must not import core
// (TestNoLLMClients).
func EstimateText(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return (n + 3) / 4
}

// ValidateCompaction checks a plugin-supplied compaction.
func ValidateCompaction(c *hooks.Compaction, lim hooks.CompactionLimits) error {
	if c == nil {
		return fmt.Errorf("%w: no compaction", hooks.ErrInvalidResult)
	}
	if err := checkSummary(c.Summary, lim.MaxSummaryTokens, lim.EstimateTokens); err != nil {
		return err
	}
	if c.FirstKeptEntryID == "" {
		return fmt.Errorf("%w: compaction has no firstKeptEntryId", hooks.ErrInvalidResult)
	}
	if lim.AllowedFirstKeptIDs != nil && !slices.Contains(lim.AllowedFirstKeptIDs, c.FirstKeptEntryID) {
		return fmt.Errorf("%w: firstKeptEntryId %q is not an entry of the compacted range on the path", hooks.ErrInvalidResult, c.FirstKeptEntryID)
	}
	if c.TokensBefore < 0 {
		return fmt.Errorf("%w: tokensBefore %d is negative", hooks.ErrInvalidResult, c.TokensBefore)
	}
	if err := checkJSON("details", c.Details); err != nil {
		return err
	}
	return checkJSON("preserveData", c.PreserveData)
}

// ValidateSummary checks a plugin-supplied branch summary.
func ValidateSummary(s *hooks.BranchSummary, lim hooks.SummaryLimits) error {
	if s == nil {
		return fmt.Errorf("%w: no summary", hooks.ErrInvalidResult)
	}
	if err := checkSummary(s.Summary, lim.MaxSummaryTokens, lim.EstimateTokens); err != nil {
		return err
	}
	return checkJSON("details", s.Details)
}

func checkSummary(text string, maxTokens int, estimate func(string) int) error {
	if strings.TrimSpace(text) == "" {
		return fmt.Errorf("%w: summary is empty", hooks.ErrInvalidResult)
	}
	if maxTokens > 0 {
		if estimate == nil {
			estimate = EstimateText
		}
		if n := estimate(text); n > maxTokens {
			return fmt.Errorf("%w: summary is ~%d tokens, over the cap of %d", hooks.ErrInvalidResult, n, maxTokens)
		}
	}
	return nil
}

func checkJSON(field string, raw json.RawMessage) error {
	if len(raw) != 0 && !json.Valid(raw) {
		return fmt.Errorf("%w: %s is not valid JSON", hooks.ErrInvalidResult, field)
	}
	return nil
}
