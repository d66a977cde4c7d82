package engine

import "github.com/pith-dev/pith/core/compaction"

// Settings are the values one operation works with (docs/behaviour.md §14). They are
// passed and stored by value: a Session never sees a half-applied reload.
// Start from DefaultSettings; the zero value has automatic compaction and
// autoContinue off.
type Settings struct {
	// Enabled turns automatic compaction (threshold and overflow) on.
	Enabled bool
	// ReserveTokens is kept free in the context window; the threshold is
	// ContextWindow − ReserveTokens.
	ReserveTokens int
	// KeepRecentTokens is how much recent conversation stays verbatim.
	KeepRecentTokens int
	// CalibrateKeepRecent scales KeepRecentTokens by the provider's real
	// token counts (docs/behaviour.md §5.3).
	CalibrateKeepRecent bool
	// CalibrationMethod is compaction.CalibrationDelta ("" too) or
	// compaction.CalibrationTotal.
	CalibrationMethod string
	// AutoContinue asks the agent to go on after a threshold compaction.
	AutoContinue bool
	// ContextWindow is the session model's window in tokens; 0 disables the
	// threshold test and the silent-overflow test.
	ContextWindow int
	// SummarizerContextWindow bounds one summarizer request's input (0: no
	// bound); SummarizerOutputLimit is that model's output cap (0: none).
	SummarizerContextWindow int
	SummarizerOutputLimit   int
	// ShortSummary asks for the 2–3 sentence shortSummary as well.
	ShortSummary bool
	// Reasoning is passed to the summarizer requests.
	Reasoning string
	// Explore selects the exploring compact worker and its budgets.
	Explore ExploreSettings
	// Pruning is tool-output pruning at every turn end, before the
	// compaction check (docs/behaviour.md §8).
	Pruning Pruning
	// BranchSummary is the navigation default and budget (docs/behaviour.md §11).
	BranchSummary BranchSummary
	// Rehydrate puts recently used files back after a compaction.
	Rehydrate Rehydrate
}

// BranchSummary configures summaries of abandoned branches.
type BranchSummary struct {
	// Enabled summarizes on every navigation unless the caller says no.
	Enabled bool
	// ContextWindow − ReserveTokens is the branch budget; zero takes the
	// branch package's defaults.
	ContextWindow int
	ReserveTokens int
}

// Pruning configures automatic tool-output pruning.
type Pruning struct {
	Enabled bool
	compaction.PruneSettings
}

// DefaultSettings are docs/behaviour.md §14's defaults with a 200 000-token window.
func DefaultSettings() Settings {
	d := compaction.DefaultSettings()
	return Settings{
		Enabled:             true,
		ReserveTokens:       d.ReserveTokens,
		KeepRecentTokens:    d.KeepRecentTokens,
		CalibrateKeepRecent: d.CalibrateKeepRecent,
		AutoContinue:        true,
		ContextWindow:       200000,
		Pruning:             Pruning{Enabled: true, PruneSettings: compaction.DefaultPruneSettings()},
	}
}

func (s Settings) compaction() compaction.Settings {
	keep := s.KeepRecentTokens
	if s.Explore.Enabled {
		keep = s.Explore.RetainedTokens // its keepRecentTokens (docs/behaviour.md §12)
	}
	return compaction.Settings{
		ReserveTokens:       s.ReserveTokens,
		KeepRecentTokens:    keep,
		CalibrateKeepRecent: s.CalibrateKeepRecent,
		CalibrationMethod:   s.CalibrationMethod,
		// An automatic compaction must be able to free room even when the
		// last tool output alone is larger than keepRecentTokens.
		CutBeforeTrailingResults: true,
	}
}

// threshold is the context size above which automatic compaction runs, or
// -1 when no window is known.
func (s Settings) threshold() int {
	if s.ContextWindow <= 0 {
		return -1
	}
	return s.ContextWindow - s.ReserveTokens
}

// above reports whether n tokens exceed the threshold (docs/behaviour.md §3).
func (s Settings) above(n int) bool {
	t := s.threshold()
	return t >= 0 && n > t
}

// summaryCap is the hard cap on a plugin-supplied summary: the output cap
// of a generated history summary (docs/behaviour.md §7).
func (s Settings) summaryCap() int { return s.ReserveTokens * 8 / 10 }
