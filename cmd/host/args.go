package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// arg is one positional argument as a command's usage names it, with what
// it is: a missing one is reported by both, where cobra only counts
// ("accepts 1 arg(s), received 0").
type arg struct {
	name string // FILE, NAME, ID
	what string // the session file
}

// sessionArg is the FILE of every command that reads or changes one
// session.
var sessionArg = arg{"FILE", "the session file, or with --store its NAME"}

// positional checks a command's positional arguments: every one of
// required, then at most len(optional) more. Its errors name the command
// and the argument; markUsageErrors makes them exit 2.
func positional(required []arg, optional ...arg) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < len(required) {
			missing := required[len(args)]
			return fmt.Errorf("%s: missing %s (%s)", cmd.Name(), missing.name, missing.what)
		}
		if max := len(required) + len(optional); len(args) > max {
			return fmt.Errorf("%s: unexpected argument %q (it takes %s)", cmd.Name(), args[max], argNames(required, optional))
		}
		return nil
	}
}

// argNames is "FILE ID [LABEL]", or "no arguments".
func argNames(required, optional []arg) string {
	var names []string
	for _, a := range required {
		names = append(names, a.name)
	}
	for _, a := range optional {
		names = append(names, "["+a.name+"]")
	}
	if len(names) == 0 {
		return "no arguments"
	}
	return strings.Join(names, " ")
}

// oneOrMore is positional for a command that takes first and any number
// of arguments like it.
func oneOrMore(first arg) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return fmt.Errorf("%s: missing %s (%s)", cmd.Name(), first.name, first.what)
		}
		return nil
	}
}
