package main

import (
	"io"
	"strings"

	"github.com/pith-dev/pith/internal/entryview"
	"github.com/pith-dev/pith/internal/termsafe"
	"github.com/spf13/cobra"
)

// completeEntryFlag makes the shell complete --name (an entry id: --to,
// --leaf) with the ids of the session the command's FILE names (or the
// --store session NAME), each with its one-line description.
func completeEntryFlag(cmd *cobra.Command, name string) {
	_ = cmd.RegisterFlagCompletionFunc(name, completeEntryIDs)
}

func completeEntryIDs(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) == 0 {
		// No session named yet: nothing to read the ids from.
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	storeURL, _ := cmd.Flags().GetString("store")
	// Warnings about the file would garble the shell's line.
	_, tree, err := loadFromTo(cmd.Context(), io.Discard, storeURL, args[0])
	if err != nil {
		cobra.CompErrorln(err.Error())
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var ids []string
	for _, n := range entryview.Layout(tree) {
		id := n.Entry.ID
		if id == "" || !strings.HasPrefix(id, toComplete) {
			continue
		}
		desc := entryview.Describe(n.Entry)
		if len(n.Labels) > 0 {
			desc = "[" + strings.Join(n.Labels, ", ") + "] " + desc
		}
		// A tab or newline would end the completion's description.
		ids = append(ids, id+"\t"+termsafe.Line(entryview.ClipLine(desc, 60)))
	}
	return ids, cobra.ShellCompDirectiveNoFileComp
}
