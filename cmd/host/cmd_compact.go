package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/signal"
	"strings"
	"syscall"

	"github.com/pith-dev/pith/config"
	"github.com/pith-dev/pith/core/compaction"
	"github.com/pith-dev/pith/core/engine"
	"github.com/pith-dev/pith/core/explore"
	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/internal/termsafe"
	"github.com/pith-dev/pith/internal/wiring"
	"github.com/spf13/cobra"
)

type compactFlags struct {
	instructions     string
	keepRecentTokens int
	reserveTokens    int
	noCalibrate      bool
	shortSummary     bool
	calibration      string
	strategy         string
	dryRun           bool
	asJSON           bool
	config           string
	verbose          bool
	store            string
	workspace        string
	provider         providerFlags
	// serve is the address of a running `pith serve` that compacts
	// instead of this process (compact_serve.go); serveCA its CA file.
	serve, serveCA string
}

func newCompactCommand() *cobra.Command {
	var f compactFlags
	cmd := &cobra.Command{
		Use:   "compact FILE | --store URL NAME | --serve ADDR NAME",
		Short: "Compact a session: summarize old history and keep the recent part",
		Long: `Prepares a compaction on the path from the root to the current leaf (the last
entry), summarizes the old part (the built-in summarizer by default: no
network), validates the summary and appends a compaction entry, with the
plugins of --config attached. The file is only ever appended to; a failed,
rejected or interrupted compaction leaves it as it was.

With --strategy explore (or compaction.strategy: explore) a tool-calling model
explores an overview of the old history with session-log and workspace tools,
writes the summary, and chooses workspace files to put back into the new
context (a custom_message entry after the compaction). Its turns are shown as
they happen.

Files are read for the model (compaction.rehydrate, the explore worker's
read_file and mark_read_required) from the session's workspace, the cwd its
header names, only when that is the current directory or below it, below
--workspace DIR, or below a workspace.roots directory: a session written
elsewhere names any directory. Outside them no file is read (one warning
line). Wherever they are read, files on the deny list (private keys, .ssh,
.aws, .env*, .netrc, *.pem, ...; workspace.deny adds patterns) never are.

--dry-run shows the preparation without summarizing or writing anything.

With --store, NAME is a session of that store (a postgres:// URL or a
sessions directory); the compaction runs under the session's lease, so it
is refused while a host is compacting or pruning the same session.

With --serve ADDR, NAME is a session of a running ` + "`pith serve`" + ` (its path below
the daemon's sessions.root) and the daemon compacts it: with its
configuration and its plugins, which it started once for all its
compactions, where a command starts and stops its own. Only --instructions,
--json and -v go with it; PITH_TOKEN is the bearer token, and an address that
is not loopback or a unix socket is reached over TLS (--serve-ca FILE for a
private CA).`,
		Args: positional([]arg{{"FILE", "the session file, or with --store or --serve its NAME"}}),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			fl := cmd.Flags()
			if f.serve != "" || fl.Changed("serve-ca") {
				if err := checkServeFlags(fl, f.serve, "instructions", "json"); err != nil {
					return err
				}
				return runCompactServe(ctx, cmd.OutOrStdout(), cmd.ErrOrStderr(), args[0], f)
			}
			return runCompact(ctx, cmd.OutOrStdout(), cmd.ErrOrStderr(), args[0], f, func(name string) bool { return fl.Changed(name) })
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.instructions, "instructions", "", "what the summary should focus on")
	// No flag default: an unset flag leaves the configured value, and
	// cobra would print a second, misleading "(default N)".
	fl.IntVar(&f.keepRecentTokens, "keep-recent-tokens", 0, "tokens of recent conversation to keep verbatim (default: the config's, 20000 without one)")
	fl.IntVar(&f.reserveTokens, "reserve-tokens", 0, "tokens reserved for the summary and the next turn (default: the config's, 16384 without one)")
	fl.BoolVar(&f.noCalibrate, "no-calibrate", false, "do not scale keep-recent-tokens by the provider's real usage (docs/behaviour.md §5.3)")
	choiceFlag(cmd, &f.calibration, "calibration", "calibration method", "how the usage ratio is measured: delta or total (default: compaction.calibrationMethod)",
		compaction.CalibrationDelta, compaction.CalibrationTotal)
	fl.BoolVar(&f.shortSummary, "short-summary", false, "also write the 2–3 sentence short summary (default: compaction.shortSummary)")
	choiceFlag(cmd, &f.strategy, "strategy", "compaction strategy", "summary (one summarizer request) or explore (a tool-calling worker with an overview and session-log tools; needs an openai or anthropic summarizer) (default: compaction.strategy)",
		engine.StrategySummary, engine.StrategyExplore)
	fl.BoolVar(&f.dryRun, "dry-run", false, "show the preparation; summarize and write nothing")
	fl.BoolVar(&f.asJSON, "json", false, "print one JSON object")
	fl.StringVar(&f.config, "config", "", "configuration file: settings, summarizer and plugins (default $PITH_CONFIG, else ~/.config/pith/config.yaml if present)")
	fl.BoolVarP(&f.verbose, "verbose", "v", false, "log what the engine and the plugins do")
	fl.StringVar(&f.workspace, "workspace", "", "also read the session's workspace (compaction.rehydrate, the explore worker's file tools) when it is DIR or below it; without it only one under the current directory or a workspace.roots directory is read")
	addStoreFlag(cmd, &f.store)
	addServeFlags(fl, "compact", &f.serve, &f.serveCA)
	f.provider.register(cmd)
	return cmd
}

// apply puts the flags the user set over the configured settings.
func (f compactFlags) apply(s engine.Settings, changed func(string) bool) (engine.Settings, error) {
	if changed("keep-recent-tokens") {
		s.KeepRecentTokens = f.keepRecentTokens
	}
	if changed("reserve-tokens") {
		s.ReserveTokens = f.reserveTokens
	}
	if f.noCalibrate {
		s.CalibrateKeepRecent = false
	}
	if changed("calibration") {
		if f.calibration != compaction.CalibrationDelta && f.calibration != compaction.CalibrationTotal {
			return s, usageError{fmt.Errorf("--calibration must be %s or %s", compaction.CalibrationDelta, compaction.CalibrationTotal)}
		}
		s.CalibrationMethod = f.calibration
	}
	if changed("short-summary") {
		s.ShortSummary = f.shortSummary
	}
	switch f.strategy {
	case "":
	case engine.StrategySummary:
		s.Explore.Enabled = false
	case engine.StrategyExplore:
		s.Explore.Enabled = true
	default:
		return s, usageError{fmt.Errorf("--strategy must be summary or explore, got %q", f.strategy)}
	}
	if s.Explore.Enabled && changed("keep-recent-tokens") {
		// The flag names the kept part whatever the strategy calls it.
		s.Explore.RetainedTokens = s.KeepRecentTokens
	}
	if s.KeepRecentTokens <= 0 {
		return s, errKeepRecentTokens
	}
	if s.ReserveTokens <= 0 {
		return s, errReserveTokens
	}
	return s, nil
}

var (
	errKeepRecentTokens = usageError{errors.New("--keep-recent-tokens must be > 0")}
	errReserveTokens    = usageError{errors.New("--reserve-tokens must be > 0")}
)

// check finds the flags' own mistakes before anything is loaded: a bad
// number is the error, not what loading the summarizer found first.
func (f compactFlags) check(changed func(string) bool) error {
	if changed("keep-recent-tokens") && f.keepRecentTokens <= 0 {
		return errKeepRecentTokens
	}
	if changed("reserve-tokens") && f.reserveTokens <= 0 {
		return errReserveTokens
	}
	return nil
}

func runCompact(ctx context.Context, stdout, stderr io.Writer, path string, f compactFlags, changed func(string) bool) error {
	log := cliLogger(stderr, f.verbose)
	if err := f.check(changed); err != nil {
		return err
	}
	if f.dryRun {
		return dryRunCompact(ctx, stdout, stderr, path, f, changed)
	}
	rt, err := newRuntime(ctx, path, f.store, f.config, f.workspace, f.provider, engine.CompactEvents, log)
	if err != nil {
		return err
	}
	defer rt.close()
	settings, err := f.apply(wiring.EngineSettings(rt.cfg), changed)
	if err != nil {
		return err
	}
	rt.engine.SetSettings(settings)
	label := "compacting with the " + rt.summName + " summarizer"
	if settings.Explore.Enabled {
		label = "compacting: the " + rt.summName + " worker explores the session"
	}
	prog := startProgress(stderr, label)
	unsubscribe := rt.engine.Subscribe(func(ev engine.Event) {
		if ev.Kind == engine.EventCompactionProgress && ev.Progress != nil {
			prog.line(workerTurnLine(ev.Progress))
		}
	})
	res, err := rt.engine.Compact(ctx, f.instructions)
	unsubscribe()
	prog.done()
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%s: compaction interrupted; the session is unchanged", path)
		}
		if errors.Is(err, engine.ErrNothingToCompact) || errors.Is(err, engine.ErrCancelled) ||
			errors.Is(err, session.ErrUnchanged) || errors.Is(err, session.ErrIncomplete) {
			// The write protocol's own words on the file's state are exact.
			return fmt.Errorf("%s: %w", path, err)
		}
		return fmt.Errorf("%s: %w; the session is unchanged", path, err)
	}
	return printCompaction(stdout, res, f.asJSON)
}

func dryRunCompact(ctx context.Context, stdout, stderr io.Writer, path string, f compactFlags, changed func(string) bool) error {
	cfg, err := config.Load(configPath(f.config))
	if err != nil {
		return err
	}
	s, err := f.apply(wiring.EngineSettings(cfg), changed)
	if err != nil {
		return err
	}
	// Calibration estimates nearly every message of the range: measured
	// while the lines are scanned.
	_, tree, err := loadReadOnly(ctx, stderr, f.store, path, session.LoadOptions{ParseOptions: session.ParseOptions{Estimates: s.CalibrateKeepRecent}})
	if err != nil {
		return err
	}
	keep := s.KeepRecentTokens
	if s.Explore.Enabled {
		keep = s.Explore.RetainedTokens // as the engine compacts with explore
	}
	prep, err := compaction.Prepare(tree.Path(tree.Last()), compaction.Settings{
		ReserveTokens: s.ReserveTokens, KeepRecentTokens: keep, CalibrateKeepRecent: s.CalibrateKeepRecent,
		CalibrationMethod:        s.CalibrationMethod,
		CutBeforeTrailingResults: true, // as the engine compacts
	})
	if err := printPreparation(stdout, prep, err, f.asJSON); err != nil {
		return err
	}
	if errors.Is(err, compaction.ErrNothingToCompact) {
		// The code and the line the compaction itself would give: a
		// script that dry-runs first branches on the same exit 3.
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

type preparationJSON struct {
	FirstKeptEntryID    string   `json:"firstKeptEntryId"`
	IsSplitTurn         bool     `json:"isSplitTurn"`
	TokensBefore        int      `json:"tokensBefore"`
	KeepRecentTokens    int      `json:"keepRecentTokens"`
	MessagesToSummarize int      `json:"messagesToSummarize"`
	TurnPrefixMessages  int      `json:"turnPrefixMessages"`
	ReadFiles           []string `json:"readFiles"`
	ModifiedFiles       []string `json:"modifiedFiles"`
	// Calibration is how keepRecentTokens was derived; absent when
	// calibration is off.
	Calibration *compaction.Calibration `json:"calibration,omitempty"`
}

func printPreparation(w io.Writer, prep *compaction.Preparation, err error, asJSON bool) error {
	if err != nil && !errors.Is(err, compaction.ErrNothingToCompact) {
		return err
	}
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		if err != nil {
			return enc.Encode(struct {
				NothingToCompact bool   `json:"nothingToCompact"`
				Reason           string `json:"reason"`
			}{true, nothingReason(err)})
		}
		var cal *compaction.Calibration
		if prep.Calibration.Method != "" {
			cal = &prep.Calibration
		}
		return enc.Encode(preparationJSON{
			Calibration:         cal,
			FirstKeptEntryID:    prep.FirstKeptEntryID,
			IsSplitTurn:         prep.IsSplitTurn(),
			TokensBefore:        prep.TokensBefore,
			KeepRecentTokens:    prep.KeepRecentTokens,
			MessagesToSummarize: len(prep.MessagesToSummarize),
			TurnPrefixMessages:  len(prep.TurnPrefixMessages),
			ReadFiles:           nonNil(prep.ReadFiles),
			ModifiedFiles:       nonNil(prep.ModifiedFiles),
		})
	}
	if err != nil {
		return nil // the caller reports it, as the compaction would
	}
	fmt.Fprintf(w, "tokens before:        %d\n", prep.TokensBefore)
	if c := prep.Calibration; c.Method != "" {
		fmt.Fprintf(w, "keep recent tokens:   %d (calibrated, %s method: ratio %.3f = %d measured / %d estimated)\n",
			prep.KeepRecentTokens, c.Method, c.Ratio, c.Measured, c.Estimated)
	} else {
		fmt.Fprintf(w, "keep recent tokens:   %d (not calibrated)\n", prep.KeepRecentTokens)
	}
	fmt.Fprintf(w, "first kept entry:     %s\n", termsafe.Line(prep.FirstKeptEntryID))
	fmt.Fprintf(w, "messages to summarize: %d\n", len(prep.MessagesToSummarize))
	if prep.IsSplitTurn() {
		fmt.Fprintf(w, "split turn:           yes, %d messages of the turn's start summarized separately\n", len(prep.TurnPrefixMessages))
	} else {
		fmt.Fprintf(w, "split turn:           no\n")
	}
	fmt.Fprintf(w, "messages kept:        %d\n", len(prep.RecentMessages))
	fmt.Fprintf(w, "files read:           %d, modified: %d\n", len(prep.ReadFiles), len(prep.ModifiedFiles))
	return nil
}

// nothingReason is the reason part of an ErrNothingToCompact error.
func nothingReason(err error) string {
	s := err.Error()
	prefix := compaction.ErrNothingToCompact.Error() + ": "
	if len(s) > len(prefix) && s[:len(prefix)] == prefix {
		return s[len(prefix):]
	}
	return s
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func printCompaction(w io.Writer, res *engine.Result, asJSON bool) error {
	if asJSON {
		// JSON escapes control characters itself; the text below goes
		// to a terminal and is escaped (termsafe): ids, names and the
		// summary come from the session, the model and plugins.
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		out := struct {
			EntryID            string         `json:"entryId"`
			FirstKeptEntryID   string         `json:"firstKeptEntryId"`
			TokensBefore       int            `json:"tokensBefore"`
			TokensAfter        int            `json:"tokensAfter"`
			MessagesSummarized int            `json:"messagesSummarized"`
			IsSplitTurn        bool           `json:"isSplitTurn"`
			FromPlugin         string         `json:"fromPlugin,omitempty"`
			Strategy           string         `json:"strategy"`
			Explore            *explore.Stats `json:"explore,omitempty"`
			AutoReadEntryID    string         `json:"autoReadEntryId,omitempty"`
			Summary            string         `json:"summary"`
			ShortSummary       string         `json:"shortSummary,omitempty"`
		}{res.Entry.ID, res.FirstKeptEntryID, res.TokensBefore, res.TokensAfter, res.MessagesSummarized, res.SplitTurn, res.Plugin,
			res.Strategy, res.Explore, "", res.Summary, res.ShortSummary}
		if res.AutoReadEntry != nil {
			out.AutoReadEntryID = res.AutoReadEntry.ID
		}
		return enc.Encode(out)
	}
	fmt.Fprintf(w, "compacted: %d → %d tokens; %d messages summarized", res.TokensBefore, res.TokensAfter, res.MessagesSummarized)
	if res.SplitTurn {
		fmt.Fprint(w, " (split turn)")
	}
	if res.FromHook {
		fmt.Fprintf(w, "; summary supplied by plugin %s", termsafe.Line(res.Plugin))
	}
	fmt.Fprintf(w, "; kept from entry %s; saved as entry %s\n", termsafe.Line(res.FirstKeptEntryID), termsafe.Line(res.Entry.ID))
	if x := res.Explore; x != nil {
		fmt.Fprintf(w, "explored in %d turns (~%d of %d worker tokens; overview ~%d tokens); new context ~%d tokens\n",
			x.Turns, x.WorkerTokens, x.WorkerMaxTokens, x.OverviewTokens, x.ResultContextTokens)
		if res.AutoReadEntry != nil {
			fmt.Fprintf(w, "auto-read entry %s: %d files (%s), %d references\n", termsafe.Line(res.AutoReadEntry.ID),
				len(x.AutoReadFiles), termsafe.Line(strings.Join(x.AutoReadFiles, ", ")), len(x.References))
		}
		for _, warning := range x.Warnings {
			fmt.Fprintf(w, "warning: %s\n", termsafe.Line(warning))
		}
	}
	fmt.Fprintf(w, "\n%s\n", termsafe.Text(res.Summary))
	if res.ShortSummary != "" {
		fmt.Fprintf(w, "\nShort summary: %s\n", termsafe.Text(res.ShortSummary))
	}
	return nil
}

// workerTurnLine is one live line of the explore worker's progress.
func workerTurnLine(p *explore.Progress) string {
	tools := "no tool"
	if len(p.Tools) > 0 {
		tools = strings.Join(p.Tools, ", ")
	}
	return fmt.Sprintf("explore: turn %d/%d: %s — ~%d of %d tokens", p.Turn, p.MaxTurns, tools, p.Tokens, p.Max)
}
