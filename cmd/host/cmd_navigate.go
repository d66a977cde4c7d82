package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/signal"
	"syscall"

	"github.com/pith-dev/pith/config"
	"github.com/pith-dev/pith/core/branch"
	"github.com/pith-dev/pith/core/engine"
	"github.com/pith-dev/pith/internal/termsafe"
	"github.com/pith-dev/pith/internal/wiring"
	"github.com/spf13/cobra"
)

type navigateFlags struct {
	to           string
	summarize    bool
	noSummarize  bool
	instructions string
	label        string
	asJSON       bool
	dryRun       bool
	config       string
	verbose      bool
	store        string
	provider     providerFlags
	// serve is a running `pith serve` that navigates instead of this
	// process (via_serve.go); serveCA its CA file.
	serve, serveCA string
}

func newNavigateCommand() *cobra.Command {
	var f navigateFlags
	cmd := &cobra.Command{
		Use:   "navigate FILE --to ID | --store URL NAME --to ID | --serve ADDR NAME --to ID",
		Short: "Move the session's leaf to another entry, optionally summarizing the branch left behind",
		Long: `Moves the current leaf (the last entry) to the entry --to. With --summarize
(or branchSummary.enabled: true in the configuration, unless --no-summarize),
the branch being left is summarized and the summary is attached where the
conversation continues, so the model keeps what was learned there.
When the target is a user message, the leaf moves to its parent and the
message's text is printed so it can be edited and sent again.

--label (or a session_before_tree plugin's label) labels the branch summary
when one is written, else the entry --to, as pi does.

The move is durable: a small entry pi also reads records it, so reopening
the file (in Pith or pi) continues from the new position. Plugins of
--config see session_before_tree and session_tree.

--dry-run shows what would be summarized, changing nothing.

With --serve ADDR, NAME is a session of a running ` + "`pith serve`" + ` (its path below
the daemon's sessions.root) and the daemon navigates it, with its
configuration and its plugins, already started; --to, --summarize,
--no-summarize, --instructions, --label, --json and -v go with it.
PITH_TOKEN is the bearer token; an address that is not loopback or a unix
socket is reached over TLS (--serve-ca FILE for a private CA).`,
		Args: positional([]arg{{"FILE", "the session file, or with --store or --serve its NAME"}}),
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.to == "" {
				return errors.New("--to ID is required")
			}
			if fl := cmd.Flags(); f.serve != "" || fl.Changed("serve-ca") {
				if err := checkServeFlags(fl, f.serve, "to", "summarize", "no-summarize", "instructions", "label", "json"); err != nil {
					return err
				}
				mode, err := summarizeMode(cmd, f)
				if err != nil {
					return err
				}
				ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
				defer stop()
				return runNavigateServe(ctx, cmd.OutOrStdout(), cmd.ErrOrStderr(), args[0], f, mode)
			}
			if f.dryRun {
				return dryRunNavigate(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), args[0], f)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			log := cliLogger(cmd.ErrOrStderr(), f.verbose)
			rt, err := newRuntime(ctx, args[0], f.store, f.config, "", f.provider, engine.NavigateEvents, log)
			if err != nil {
				return err
			}
			defer rt.close()
			mode, err := summarizeMode(cmd, f)
			if err != nil {
				return err
			}
			prog := startProgress(cmd.ErrOrStderr(), "navigating")
			res, err := rt.engine.Navigate(ctx, f.to, engine.NavigateOptions{
				Mode: mode, CustomInstructions: f.instructions, Label: f.label,
			})
			prog.done()
			if err != nil {
				if ctx.Err() != nil {
					return fmt.Errorf("%s: navigation interrupted; the session is unchanged", args[0])
				}
				return fmt.Errorf("%s: %w", args[0], err)
			}
			return printNavigation(cmd.OutOrStdout(), res, f.asJSON)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.to, "to", "", "the entry id to move to")
	completeEntryFlag(cmd, "to")
	fl.BoolVar(&f.summarize, "summarize", false, "summarize the branch being left (default: branchSummary.enabled)")
	fl.BoolVar(&f.noSummarize, "no-summarize", false, "do not summarize the branch being left, whatever branchSummary.enabled says")
	fl.StringVar(&f.instructions, "instructions", "", "what the branch summary should focus on")
	fl.StringVar(&f.label, "label", "", "label the branch summary entry when one is written, else the target entry")
	fl.BoolVar(&f.asJSON, "json", false, "print one JSON object")
	fl.BoolVar(&f.dryRun, "dry-run", false, "show what would be summarized; change nothing")
	fl.StringVar(&f.config, "config", "", "configuration file: budgets, summarizer and plugins (default $PITH_CONFIG, else ~/.config/pith/config.yaml if present)")
	fl.BoolVarP(&f.verbose, "verbose", "v", false, "log what the engine and the plugins do")
	addStoreFlag(cmd, &f.store)
	addServeFlags(fl, "navigate", &f.serve, &f.serveCA)
	f.provider.register(cmd)
	return cmd
}

// dryRunNavigate prints what navigating from the current leaf (the last
// entry) to --to would summarize, under the configured budget (by default
// 128000 − 16384).
func dryRunNavigate(ctx context.Context, w, stderr io.Writer, path string, f navigateFlags) error {
	cfg, err := config.Load(configPath(f.config))
	if err != nil {
		return err
	}
	_, tree, err := loadFromTo(ctx, stderr, f.store, path)
	if err != nil {
		return err
	}
	if !tree.Has(f.to) {
		return fmt.Errorf("%s: %w: %q", path, branch.ErrUnknownEntry, f.to)
	}
	oldLeaf := ""
	if last := tree.Last(); last != nil {
		oldLeaf = last.ID
	}
	// The window the engine would use: the session model's when it names one.
	window := engine.BranchWindow(wiring.EngineSettings(cfg), 0, 0, tree.Settings(tree.Last()).Model != "")
	budget := branch.NavigateOptions{ContextWindow: window, ReserveTokens: cfg.BranchSummary.ReserveTokens}.TokenBudget()
	r := branch.DryRun(tree, oldLeaf, f.to, budget)
	if f.asJSON {
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		return enc.Encode(struct {
			CommonAncestorID   *string  `json:"commonAncestorId"`
			EntriesToSummarize int      `json:"entriesToSummarize"`
			Messages           int      `json:"messages"`
			Tokens             int      `json:"tokens"`
			ReadFiles          []string `json:"readFiles"`
			ModifiedFiles      []string `json:"modifiedFiles"`
		}{r.CommonAncestorID, r.EntriesToSummarize, r.Messages, r.Tokens, nonNil(r.ReadFiles), nonNil(r.ModifiedFiles)})
	}
	anc := "none"
	if r.CommonAncestorID != nil {
		anc = *r.CommonAncestorID
	}
	fmt.Fprintf(w, "from %s to %s (common ancestor %s)\n", termsafe.Line(oldLeaf), termsafe.Line(f.to), termsafe.Line(anc))
	fmt.Fprintf(w, "entries on the branch left behind: %d\n", r.EntriesToSummarize)
	fmt.Fprintf(w, "messages a summary would get:     %d (%d tokens, budget %d)\n", r.Messages, r.Tokens, budget)
	fmt.Fprintf(w, "files read: %d, modified: %d\n", len(r.ReadFiles), len(r.ModifiedFiles))
	return nil
}

func printNavigation(w io.Writer, res *branch.NavigateResult, asJSON bool) error {
	summaryID := ""
	if res.SummaryEntry != nil {
		summaryID = res.SummaryEntry.ID
	}
	if asJSON {
		out := map[string]any{
			"noOp": res.NoOp, "oldLeafId": res.OldLeafID, "targetId": res.TargetID, "positionId": res.PositionID,
			"newLeafId": res.NewLeafID, "entriesSummarized": res.EntriesSummarized, "summaryEntryId": summaryID,
			"fromHook": res.FromHook,
		}
		if res.HasEditorText {
			out["editorText"] = res.EditorText
		}
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		return enc.Encode(out)
	}
	if res.NoOp {
		fmt.Fprintf(w, "already at %s: nothing to do\n", termsafe.Line(res.TargetID))
		return nil
	}
	// Ids and the message come from the session: escaped (termsafe).
	fmt.Fprintf(w, "moved from %s to %s", termsafe.Line(res.OldLeafID), termsafe.Line(res.TargetID))
	if res.PositionID != res.TargetID {
		fmt.Fprintf(w, " (the conversation continues from %s, before that message)", termsafe.Line(orNone(res.PositionID)))
	}
	fmt.Fprintln(w)
	if res.SummaryEntry != nil {
		by := "the summarizer"
		if res.FromHook {
			by = "a plugin"
		}
		fmt.Fprintf(w, "branch summary %s written by %s, covering %d entries\n", termsafe.Line(summaryID), by, res.EntriesSummarized)
	}
	if res.HasEditorText {
		fmt.Fprintf(w, "\nmessage to edit and send again:\n%s\n", termsafe.Text(res.EditorText))
	}
	return nil
}

func orNone(id string) string {
	if id == "" {
		return "the start"
	}
	return id
}

// summarizeMode is --summarize / --no-summarize, or the configuration's
// branchSummary.enabled when neither is given.
func summarizeMode(cmd *cobra.Command, f navigateFlags) (engine.SummarizeMode, error) {
	yes, no := cmd.Flags().Changed("summarize"), cmd.Flags().Changed("no-summarize")
	switch {
	case yes && no && f.summarize && f.noSummarize:
		return 0, errors.New("--summarize and --no-summarize contradict each other")
	case yes && f.summarize, no && !f.noSummarize:
		return engine.SummarizeAlways, nil
	case yes, no:
		return engine.SummarizeNever, nil
	}
	return engine.SummarizeDefault, nil
}
