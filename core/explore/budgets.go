package explore

import "fmt"

// Budgets are the limits of one exploring compaction, in tokens (chars/4
// estimates) except MaxTurns. They are the compaction.* keys of the same
// names in the configuration.
type Budgets struct {
	// OverviewTarget is the size the overview aims at; OverviewWarning the
	// size above which a warning is given (the compaction goes on);
	// OverviewDeadline the size above which a coarser overview is built.
	OverviewTarget, OverviewWarning, OverviewDeadline int
	// WorkerContextMax is the hard limit of the whole worker conversation
	// (system prompt, tools, overview, every turn), estimated before each
	// request.
	WorkerContextMax int
	// FinishWarningRemaining: at or below this many tokens left, the worker
	// is told once to stop exploring and write the summary.
	FinishWarningRemaining int
	// FinalReserve is kept free for the summary and the closing turn: a tool
	// result that would eat into it is truncated.
	FinalReserve int
	// MaxTurns bounds the model requests (a runaway guard).
	MaxTurns int
	// SummaryTarget is the size asked for in the prompt; SummaryMax the hard
	// limit (one request to shorten, then failure).
	SummaryTarget, SummaryMax int
	// AutoReadBudget bounds the file content mark_read_required puts into
	// the new context, all files together.
	AutoReadBudget int
	// ResultContextMax bounds the new initial context: summary, auto-read
	// files, references and the retained tail.
	ResultContextMax int
}

// DefaultBudgets are the defaults of the configuration (docs/behaviour.md §12).
func DefaultBudgets() Budgets {
	return Budgets{
		OverviewTarget: 8000, OverviewWarning: 16000, OverviewDeadline: 40000,
		WorkerContextMax: 50000, FinishWarningRemaining: 8000, FinalReserve: 4000,
		MaxTurns:      20,
		SummaryTarget: 2000, SummaryMax: 4000,
		AutoReadBudget:   8000,
		ResultContextMax: 60000,
	}
}

// Check reports the first budget that makes no sense, so a caller that
// skipped configuration validation still fails with one clear line.
func (b Budgets) Check() error {
	for _, f := range []struct {
		name string
		n    int
	}{
		{"overviewTargetTokens", b.OverviewTarget}, {"overviewWarningTokens", b.OverviewWarning},
		{"overviewDeadlineTokens", b.OverviewDeadline}, {"workerContextMaxTokens", b.WorkerContextMax},
		{"finishWarningRemainingTokens", b.FinishWarningRemaining}, {"finalReserveTokens", b.FinalReserve},
		{"workerMaxTurns", b.MaxTurns}, {"summaryTargetTokens", b.SummaryTarget},
		{"summaryMaxTokens", b.SummaryMax}, {"autoReadBudgetTokens", b.AutoReadBudget},
		{"resultContextMaxTokens", b.ResultContextMax},
	} {
		if f.n <= 0 {
			return fmt.Errorf("explore: compaction.%s must be > 0, got %d", f.name, f.n)
		}
	}
	if b.FinalReserve >= b.WorkerContextMax {
		return fmt.Errorf("explore: compaction.finalReserveTokens (%d) must be < workerContextMaxTokens (%d)", b.FinalReserve, b.WorkerContextMax)
	}
	return nil
}
