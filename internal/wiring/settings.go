package wiring

import (
	"github.com/pith-dev/pith/config"
	"github.com/pith-dev/pith/core/compaction"
	"github.com/pith-dev/pith/core/engine"
	"github.com/pith-dev/pith/core/explore"
)

// EngineSettings are the engine's settings a configuration gives: the
// same for a one-shot command (before its flags) and for the daemon.
func EngineSettings(cfg *config.Config) engine.Settings {
	s := engine.DefaultSettings()
	s.Enabled = cfg.Compaction.Enabled
	s.ReserveTokens = cfg.Compaction.ReserveTokens
	s.KeepRecentTokens = cfg.Compaction.KeepRecentTokens
	s.CalibrateKeepRecent = cfg.Compaction.CalibrateKeepRecent
	s.CalibrationMethod = cfg.Compaction.CalibrationMethod
	s.AutoContinue = cfg.Compaction.AutoContinue
	s.ContextWindow = cfg.ContextWindow
	s.SummarizerContextWindow = cfg.SummarizerContextWindow()
	s.SummarizerOutputLimit = cfg.Summarizer.MaxOutputTokens
	s.Pruning = engine.Pruning{Enabled: cfg.Pruning.Enabled, PruneSettings: compaction.PruneSettings{
		Protect:        cfg.Pruning.ProtectTokens,
		Minimum:        cfg.Pruning.MinimumSavings,
		ProtectedTools: cfg.Pruning.ProtectedTools,
		Thinking:       cfg.Pruning.Thinking,
	}}
	s.BranchSummary = engine.BranchSummary{
		Enabled:       cfg.BranchSummary.Enabled,
		ContextWindow: cfg.BranchSummary.ContextWindow,
		ReserveTokens: cfg.BranchSummary.ReserveTokens,
	}
	s.ShortSummary = cfg.Compaction.ShortSummary
	rh := cfg.Compaction.Rehydrate
	s.Rehydrate = engine.Rehydrate{Files: rh.Files, MaxTokensPerFile: rh.MaxTokensPerFile, TotalTokens: rh.TotalTokens}
	c := &cfg.Compaction
	s.Explore = engine.ExploreSettings{
		Enabled:        c.Strategy == config.StrategyExplore,
		RetainedTokens: c.RetainedTokens,
		Budgets: explore.Budgets{
			OverviewTarget: c.OverviewTargetTokens, OverviewWarning: c.OverviewWarningTokens, OverviewDeadline: c.OverviewDeadlineTokens,
			WorkerContextMax: c.WorkerContextMaxTokens, FinishWarningRemaining: c.FinishWarningRemainingTokens, FinalReserve: c.FinalReserveTokens,
			MaxTurns:      c.WorkerMaxTurns,
			SummaryTarget: c.SummaryTargetTokens, SummaryMax: c.SummaryMaxTokens,
			AutoReadBudget:   c.AutoReadBudgetTokens,
			ResultContextMax: c.ResultContextMaxTokens,
		},
	}
	return s
}
