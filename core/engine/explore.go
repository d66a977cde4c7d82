package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/pith-dev/pith/core/compaction"
	"github.com/pith-dev/pith/core/explore"
	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/core/summary"
	"github.com/pith-dev/pith/core/transcript"
	"github.com/pith-dev/pith/core/workspace"
)

// ErrNoToolModel: the explore strategy is configured but no model that can
// call tools is (the built-in summarizer cannot). It is never silently
// replaced by the ordinary strategy.
var ErrNoToolModel = errors.New("compaction.strategy explore needs a tool-calling model: set summarizer.provider to openai or anthropic and summarizer.model (or compaction.model)")

// Compaction strategies (docs/behaviour.md §7, §12).
const (
	StrategySummary = "summary"
	StrategyExplore = "explore"
)

// ExploreSettings switch a Session to the exploring compact worker.
type ExploreSettings struct {
	// Enabled selects the explore strategy for every compaction, manual and
	// automatic.
	Enabled bool
	// RetainedTokens plays keepRecentTokens' role for this strategy: how
	// much of the newest conversation stays verbatim.
	RetainedTokens int
	Budgets        explore.Budgets
}

// exploreOutcome is what the explore strategy adds to an ordinary
// compaction result: the auto-read entry and the figures.
type exploreOutcome struct {
	autoRead *workspace.Built
	stats    explore.Stats
	// resultTokens is the dry-run estimate of the new initial context.
	resultTokens int
}

// extraDrafts are the entries appended after the compaction entry.
func (o *exploreOutcome) extraDrafts() []session.Draft {
	if o == nil || o.autoRead == nil {
		return nil
	}
	return []session.Draft{o.autoRead.Draft}
}

// explorer is the tool-calling model of an exploring compaction.
func (s *Session) explorer() (summary.ToolCaller, error) {
	if s.opts.Explorer != nil {
		return s.opts.Explorer, nil
	}
	tc, err := summary.AsToolCaller(s.opts.Summarizer)
	if err != nil {
		return nil, ErrNoToolModel
	}
	return tc, nil
}

// exploreGenerate runs the exploring worker on prep (docs/behaviour.md §12). The hooks'
// context lines and prompt and the user's focus go into the worker's
// instructions; warnings go to the log and the event stream.
func (s *Session) exploreGenerate(ctx context.Context, st Settings, reason Reason, prep *compaction.Preparation, ropts compaction.RequestOptions) (*compaction.Result, *exploreOutcome, error) {
	model, err := s.explorer()
	if err != nil {
		return nil, nil, err
	}
	ws := s.openWorkspace("explore: the file tools will say so")
	if ws != nil {
		defer ws.Close()
	}
	w := &explore.Worker{
		Model:     model,
		Budgets:   st.Explore.Budgets,
		Reasoning: st.Reasoning,
		Logger:    s.log.Named("explore"),
		Warn: func(msg string) {
			s.emit(Event{Kind: EventCompactionWarning, Reason: reason, Error: msg})
		},
		Progress: func(p explore.Progress) {
			s.emit(Event{Kind: EventCompactionProgress, Reason: reason, Progress: &p})
		},
	}
	msgs := append(append([]session.Message{}, prep.MessagesToSummarize...), prep.TurnPrefixMessages...)
	res, err := w.Run(ctx, explore.Input{
		Messages: msgs,
		Retained: prep.RecentMessages,
		Overview: explore.OverviewInput{
			PreviousSummary: prep.PreviousSummary,
			ReadFiles:       prep.ReadFiles,
			ModifiedFiles:   prep.ModifiedFiles,
		},
		Workspace: ws,
		Instructions: explore.Instructions{
			Focus:        ropts.Instructions,
			ContextLines: ropts.ContextLines,
			Prompt:       ropts.Prompt,
		},
	})
	if errors.Is(err, summary.ErrNoToolCalling) {
		return nil, nil, ErrNoToolModel
	}
	if err != nil {
		return nil, nil, err
	}
	summary := strings.TrimSpace(res.Summary)
	if files := transcript.FormatFileOperations(prep.ReadFiles, prep.ModifiedFiles); files != "" {
		summary += files
	}
	n, err := explore.DryRun(summary, res.AutoRead, prep.RecentMessages, st.Explore.Budgets)
	if err != nil {
		return nil, nil, err
	}
	res.Stats.ResultContextTokens = n
	gen := &compaction.Result{
		Summary:          summary,
		FirstKeptEntryID: prep.FirstKeptEntryID,
		TokensBefore:     prep.TokensBefore,
		Details:          compaction.Details{ReadFiles: prep.ReadFiles, ModifiedFiles: prep.ModifiedFiles},
		RawDetails:       explore.Details(prep.ReadFiles, prep.ModifiedFiles, res.Stats),
		Usage:            res.Usage,
	}
	return gen, &exploreOutcome{autoRead: res.AutoRead, stats: res.Stats, resultTokens: n}, nil
}

// describe is the one line a log gets about an exploring run.
func (o *exploreOutcome) describe() string {
	if o == nil {
		return ""
	}
	return fmt.Sprintf("explore: %d turns, ~%d of %d worker tokens, %d auto-read files, %d references",
		o.stats.Turns, o.stats.WorkerTokens, o.stats.WorkerMaxTokens, len(o.stats.AutoReadFiles), len(o.stats.References))
}
