package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// unknownCommand is the error for `pith NAME` when no command is NAME,
// with cobra's suggestions (a command within two edits, or one NAME
// starts) on the same line: the root takes arbitrary arguments to show
// its help when bare, which turns cobra's own check, suggestions
// included, off, and an error reaches the user as one line.
func unknownCommand(cmd *cobra.Command, name string) error {
	if s := cmd.SuggestionsFor(name); len(s) > 0 {
		return fmt.Errorf("unknown command %q; did you mean %s? run `pith --help`", name, quoteAll(s))
	}
	return fmt.Errorf("unknown command %q; run `pith --help`", name)
}

// quoteAll is "a", "a" or "b", "a", "b" or "c".
func quoteAll(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = fmt.Sprintf("%q", w)
	}
	if len(q) == 1 {
		return q[0]
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}
