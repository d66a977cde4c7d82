package compaction

import (
	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/core/tokens"
)

// Calibration methods (docs/behaviour.md §5.3).
const (
	// CalibrationDelta measures the ratio on the growth of the prompt
	// between two assistant usages inside the range, over the estimate of
	// the messages between them: the fixed overhead of every request
	// (system prompt, tool schemas) is in both usages and cancels.
	CalibrationDelta = "delta"
	// CalibrationTotal is the original formula: the last measured prompt
	// over the estimate of the range. The overhead is in the numerator
	// only, so the ratio overstates and the kept part shrinks too much.
	CalibrationTotal = "total"
)

// Calibration is the outcome of Calibrate.
type Calibration struct {
	Method string `json:"method"`
	// Ratio is measured tokens per estimated token; 0 when nothing could
	// be measured. Only a ratio above 1 changes KeepRecentTokens.
	Ratio float64 `json:"ratio"`
	// Measured and Estimated are the two sides of the ratio.
	Measured  int `json:"measured"`
	Estimated int `json:"estimated"`
	// KeepRecentTokens is the calibrated budget.
	KeepRecentTokens int `json:"keepRecentTokens"`
}

// Calibrate scales settings.KeepRecentTokens down when the provider's
// reported prompt sizes show the chars/4 estimate undercounting (docs/behaviour.md
// §5.3), by settings.CalibrationMethod. The range is path[start:end];
// contextTotal stands in for a last usage that reports no prompt tokens
// (total method). Without usable usages nothing changes.
func Calibrate(path []*session.Entry, start, end int, settings Settings, contextTotal int) Calibration {
	keep := settings.KeepRecentTokens
	var c Calibration
	if settings.CalibrationMethod == CalibrationTotal {
		c = calibrateTotal(path, start, end, contextTotal)
	} else {
		c = calibrateDelta(path, start, end)
	}
	c.KeepRecentTokens = keep
	if c.Ratio > 1 {
		// keep / ratio in integers, without rounding up.
		c.KeepRecentTokens = max(1, int(int64(keep)*int64(c.Estimated)/int64(c.Measured)))
	}
	return c
}

// calibrateDelta takes the first and the last valid assistant usage after
// the last compaction in the range. The prompt of an assistant message is
// the overhead plus every message before it, so the difference of the two
// prompts is the real size of the messages from the first up to (not
// including) the last.
func calibrateDelta(path []*session.Entry, start, end int) Calibration {
	c := Calibration{Method: CalibrationDelta}
	lo := start
	for i := end - 1; i >= start; i-- {
		if path[i].Type == session.TypeCompaction {
			// Usages before it measured a context that no longer exists.
			lo = i + 1
			break
		}
	}
	// Only the first and the last usage matter: search from each end
	// rather than reading every assistant message's usage in between.
	prompt := func(i int) int {
		if path[i].Role() != session.RoleAssistant {
			return 0
		}
		p, ok := tokens.PromptTokens(path[i].MessageRaw())
		if !ok {
			return 0
		}
		return p
	}
	first, last, pFirst, pLast := -1, -1, 0, 0
	for i := lo; i < end && first < 0; i++ {
		if p := prompt(i); p > 0 {
			first, pFirst = i, p
		}
	}
	for i := end - 1; i >= lo && last < 0; i-- {
		if p := prompt(i); p > 0 {
			last, pLast = i, p
		}
	}
	if first < 0 || last == first || pLast <= pFirst {
		// One usage cannot separate overhead from content; a prompt that
		// shrank (pruning in between) says nothing about the estimate.
		return c
	}
	est := 0
	for i := first; i < last; i++ {
		est += summaryTokens(path[i])
	}
	if est <= 0 {
		return c
	}
	c.Measured, c.Estimated = pLast-pFirst, est
	c.Ratio = float64(c.Measured) / float64(est)
	return c
}

// calibrateTotal is the original formula: the last valid usage anywhere on
// the path over the estimate of the range.
func calibrateTotal(path []*session.Entry, start, end, contextTotal int) Calibration {
	c := Calibration{Method: CalibrationTotal}
	prompt, found := 0, false
	for i := len(path) - 1; i >= 0; i-- {
		if raw := path[i].MessageRaw(); raw != nil && path[i].Role() == session.RoleAssistant {
			if p, ok := tokens.PromptTokens(raw); ok {
				prompt, found = p, true
				break
			}
		}
	}
	if !found {
		return c
	}
	if prompt == 0 {
		prompt = contextTotal
	}
	// Only a ratio above 1 changes anything, so the sum can stop as soon as
	// it reaches prompt: a long range need not be estimated in full.
	estimated := 0
	for i := end - 1; i >= start && estimated < prompt; i-- {
		estimated += summaryTokens(path[i])
	}
	if estimated <= 0 {
		return c
	}
	c.Measured, c.Estimated = prompt, estimated
	c.Ratio = float64(prompt) / float64(estimated)
	return c
}
