package main

import (
	"errors"
	"fmt"

	"github.com/pith-dev/pith/core/session"
	"github.com/spf13/cobra"
)

func newLabelCommand() *cobra.Command {
	var (
		clear    bool
		asJSON   bool
		storeURL string
	)
	cmd := &cobra.Command{
		Use:   "label FILE ID [LABEL] | --store URL NAME ID [LABEL]",
		Short: "Label an entry (or clear its label with --clear)",
		Long: `Appends a label entry naming ID, as pi does: the label shows in pith tree,
and plugins see labels on the path (the example guard refuses to compact
while a no-compact label is on it). --clear removes the label.`,
		Args: positional([]arg{sessionArg, {"ID", "the id of the entry to label"}}, arg{"LABEL", "the label"}),
		RunE: func(cmd *cobra.Command, args []string) error {
			path, target := args[0], args[1]
			label := ""
			switch {
			case clear && len(args) == 3:
				return errors.New("give a LABEL or --clear, not both")
			case !clear && len(args) != 3:
				return errors.New("give a LABEL, or --clear")
			case !clear:
				label = args[2]
			}
			ctx := cmd.Context()
			store, err := openBackend(ctx, storeURL, path, warnLogger(cmd.ErrOrStderr()))
			if err != nil {
				return err
			}
			defer store.close()
			if !store.Tree().Has(target) {
				return fmt.Errorf("%s: no entry with id %q", path, target)
			}
			fields := map[string]any{"targetId": target}
			if !clear {
				fields["label"] = label // pi writes a cleared label without the field
			}
			es, err := store.Append(session.Draft{Type: session.TypeLabel, Fields: fields})
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), labelJSON{EntryID: es[0].ID, TargetID: target, Label: label, Cleared: clear})
			}
			if clear {
				fmt.Fprintf(cmd.OutOrStdout(), "cleared the label of %s (entry %s)\n", target, es[0].ID)
			} else {
				fmt.Fprintf(cmd.OutOrStdout(), "labelled %s %q (entry %s)\n", target, label, es[0].ID)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&clear, "clear", false, "remove the entry's label")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object: entryId, targetId, label, cleared")
	addStoreFlag(cmd, &storeURL)
	return cmd
}

// labelJSON is pith label --json (docs/cli.md): the label entry written.
type labelJSON struct {
	EntryID  string `json:"entryId"`  // the label entry appended
	TargetID string `json:"targetId"` // the entry labelled
	Label    string `json:"label"`    // "" when cleared
	Cleared  bool   `json:"cleared"`
}
