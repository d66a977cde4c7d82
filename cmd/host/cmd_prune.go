package main

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/pith-dev/pith/config"
	"github.com/pith-dev/pith/core/compaction"
	"github.com/pith-dev/pith/internal/termsafe"
	"github.com/spf13/cobra"
)

func newPruneCommand() *cobra.Command {
	var (
		dryRun, restore, asJSON bool
		cfgPath, storeURL       string
		s                       = compaction.DefaultPruneSettings()
	)
	cmd := &cobra.Command{
		Use:   "prune FILE | --store URL NAME",
		Short: "Replace old tool outputs by a short notice, keeping the originals in a sidecar archive",
		Long: `Prunes tool outputs past the newest --protect tokens when that saves
at least --minimum tokens; results of protected tools (skill, read) are never
pruned, nor are entries whose id is not unique. Every original is first
appended to FILE.pruned.jsonl with its position and SHA-256, then the session
is rewritten atomically, keeping lines other writers append meanwhile, so
nothing is lost: --restore checks every record and puts every pruned output
back byte for byte.

With --store, NAME is a session of that store: the archive is kept in the
store beside it (NAME.pruned.jsonl in a sessions directory, a row in
PostgreSQL), written in the same step as the rewrite, under the session's
lease.`,
		Args: positional([]arg{sessionArg}),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := args[0]
			out := cmd.OutOrStdout()
			cfg, err := config.Load(configPath(cfgPath))
			if err != nil {
				return err
			}
			// The flags the user gave win over pruning.* of the configuration.
			fl := cmd.Flags()
			if !fl.Changed("protect") {
				s.Protect = cfg.Pruning.ProtectTokens
			}
			if !fl.Changed("minimum") {
				s.Minimum = cfg.Pruning.MinimumSavings
			}
			if !fl.Changed("protected-tools") {
				s.ProtectedTools = cfg.Pruning.ProtectedTools
			}
			if !fl.Changed("thinking") {
				s.Thinking = cfg.Pruning.Thinking
			}
			ctx := cmd.Context()
			store, err := openBackend(ctx, storeURL, path, warnLogger(cmd.ErrOrStderr()))
			if err != nil {
				return err
			}
			defer store.close()
			archive := store.SidecarPath(compaction.ArchiveSuffix)
			if restore {
				res, err := compaction.Restore(store)
				if err != nil {
					return err
				}
				if res.NoArchive {
					return report(out, asJSON, map[string]any{"restored": 0, "refused": 0},
						fmt.Sprintf("nothing to restore: %s was never pruned (no %s)", path, archive))
				}
				text := fmt.Sprintf("restored %d tool outputs from %s", res.Restored, archive)
				if err := report(out, asJSON, map[string]any{"restored": res.Restored, "refused": len(res.Refused)}, text); err != nil {
					return err
				}
				if len(res.Refused) > 0 {
					for _, r := range res.Refused[:min(len(res.Refused), 10)] {
						fmt.Fprintf(cmd.ErrOrStderr(), "pith: refused %s\n", termsafe.Line(fmt.Sprint(r)))
					}
					return fmt.Errorf("%s: %d archive records failed their checks and were not restored", archive, len(res.Refused))
				}
				return nil
			}
			if dryRun {
				plan := compaction.PlanPrune(store.Tree().Path(store.Leaf()), s)
				plan = compaction.DropDuplicateIDs(plan, store.File(), s.Minimum)
				summary := fmt.Sprintf("%d tool outputs to prune, saving %d tokens", len(plan.Items), plan.Saving)
				return report(out, asJSON, map[string]any{"pruned": 0, "candidates": len(plan.Items), "saving": plan.Saving, "dryRun": true}, summary)
			}
			plan, err := compaction.Prune(store, s, time.Now())
			if err != nil {
				return err
			}
			if len(plan.Items) == 0 {
				return report(out, asJSON, map[string]any{"pruned": 0, "candidates": 0, "saving": 0, "dryRun": false},
					fmt.Sprintf("nothing to prune: it would save less than %d tokens", s.Minimum))
			}
			return report(out, asJSON, map[string]any{"pruned": len(plan.Items), "saving": plan.Saving, "archive": archive},
				fmt.Sprintf("pruned %d tool outputs, saving %d tokens; originals in %s", len(plan.Items), plan.Saving, archive))
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&dryRun, "dry-run", false, "show what would be pruned; change nothing")
	fl.BoolVar(&restore, "restore", false, "put every pruned output back from the archive")
	fl.BoolVar(&asJSON, "json", false, "print one JSON object")
	fl.IntVar(&s.Protect, "protect", s.Protect, "tokens of the newest tool output that are never pruned (default: pruning.protectTokens)")
	fl.IntVar(&s.Minimum, "minimum", s.Minimum, "prune only when at least this many tokens are saved (default: pruning.minimumSavings)")
	fl.StringSliceVar(&s.ProtectedTools, "protected-tools", s.ProtectedTools, "tools whose results are never pruned (default: pruning.protectedTools)")
	fl.IntVar(&s.Thinking, "thinking", 0, "also prune the thinking of all but the newest N assistant messages; 0: keep all (default: pruning.thinking)")
	fl.StringVar(&cfgPath, "config", "", "configuration file whose pruning.* block gives the defaults (default $PITH_CONFIG, else ~/.config/pith/config.yaml if present)")
	addStoreFlag(cmd, &storeURL)
	return cmd
}

func report(w io.Writer, asJSON bool, obj map[string]any, text string) error {
	if asJSON {
		return json.NewEncoder(w).Encode(obj)
	}
	_, err := fmt.Fprintln(w, text)
	return err
}
