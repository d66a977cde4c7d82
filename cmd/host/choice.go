package main

import (
	"fmt"
	"slices"

	"github.com/spf13/cobra"
)

// choiceValue is a string flag that takes one of a few words. A word not
// among them fails when the flags are parsed, before the command does
// anything (so exits 2, as any flag error), with the words it takes.
type choiceValue struct {
	value   *string
	what    string // "summarizer provider"
	choices []string
}

func (c *choiceValue) String() string { return *c.value }

// Type is "string", as a plain string flag's: --help reads the same.
func (c *choiceValue) Type() string { return "string" }

func (c *choiceValue) Set(s string) error {
	if !slices.Contains(c.choices, s) {
		return fmt.Errorf("unknown %s %q (%s)", c.what, s, orList(c.choices))
	}
	*c.value = s
	return nil
}

// choiceFlag adds a --name flag that takes one of choices, completed by
// the shell completion (pith completion).
func choiceFlag(cmd *cobra.Command, p *string, name, what, usage string, choices ...string) {
	cmd.Flags().Var(&choiceValue{value: p, what: what, choices: choices}, name, usage)
	completeWords(cmd, name, choices...)
}

// completeWords makes the shell complete --name with words.
func completeWords(cmd *cobra.Command, name string, words ...string) {
	// Registering twice is the only error, a programming one.
	_ = cmd.RegisterFlagCompletionFunc(name, cobra.FixedCompletions(words, cobra.ShellCompDirectiveNoFileComp))
}

// orList is "a", "a or b", "a, b or c".
func orList(words []string) string {
	switch len(words) {
	case 0:
		return ""
	case 1:
		return words[0]
	}
	s := words[0]
	for _, w := range words[1 : len(words)-1] {
		s += ", " + w
	}
	return s + " or " + words[len(words)-1]
}
