package summary

import (
	"errors"
	"fmt"
	"strings"

	"github.com/pith-dev/pith/core/tokens"
)

// ErrInvalidSummary is returned when a summarizer's answer must not be
// saved: empty, cut off by the output cap, or over the hard cap (docs/behaviour.md §7).
var ErrInvalidSummary = errors.New("invalid summary")

// Validate rejects a summary that must not be saved (docs/behaviour.md §7, fixes pi
// #7048 and #8652): empty, cut off by the output cap, or longer than the
// cap by estimate.
func Validate(res Result, maxTokens int) error {
	if strings.TrimSpace(res.Text) == "" {
		return fmt.Errorf("%w: the summarizer returned an empty summary", ErrInvalidSummary)
	}
	if res.FinishReason == FinishLength {
		return fmt.Errorf("%w: the summary was cut off by the output cap of %d tokens", ErrInvalidSummary, maxTokens)
	}
	if n := tokens.EstimateText(res.Text); maxTokens > 0 && n > maxTokens {
		return fmt.Errorf("%w: the summary is ~%d tokens, over the cap of %d", ErrInvalidSummary, n, maxTokens)
	}
	return nil
}
