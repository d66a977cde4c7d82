// Command pith is the Pith CLI and daemon: it inspects, migrates, compacts
// and navigates pi session files, and runs the plugin host. This package
// only wires the core packages to flags and output.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
)

// exitError carries a process exit code through cobra.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run executes the CLI and returns the exit code. Every error reaches the
// user as one line on stderr.
func run(args []string, stdout, stderr io.Writer) int {
	root := newRootCommand()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	if err := root.Execute(); err != nil {
		fmt.Fprintf(stderr, "pith: %v\n", oneLine(err))
		var ee *exitError
		if errors.As(err, &ee) {
			return ee.code
		}
		return 1
	}
	return 0
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "pith",
		Short: "Session engine for coding agents: context, compaction, branch summaries, plugins",
		Long: `Pith reads and writes the session files of the pi coding agent. It builds the
context a model would see, compacts long sessions into structured summaries,
summarizes abandoned branches, and runs out-of-process hook plugins.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(
		newContextCommand(),
		newTreeCommand(),
		newMigrateCommand(),
		newCompactCommand(),
		newPruneCommand(),
		newNavigateCommand(),
		newLabelCommand(),
		newConfigCommand(),
		newPluginsCommand(),
		newServeCommand(),
		newExportCommand(),
		newImportCommand(),
	)
	return root
}

// oneLine keeps an error on one line: the user sees a sentence, not a dump.
func oneLine(err error) string {
	s := err.Error()
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			return s[:i] + " …"
		}
	}
	return s
}
