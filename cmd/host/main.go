// Command pith is the Pith CLI and daemon: it inspects, migrates, compacts
// and navigates pi session files, and runs the plugin host. This package
// is the flags, the output and the exit codes; internal/wiring puts the
// summarizers, plugins, engine and daemon together from the configuration.
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/pith-dev/pith/internal/mapfile"
	"github.com/pith-dev/pith/internal/termsafe"
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
	deferFirstCollection()
	containPlugins()
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run executes the CLI and returns the exit code. Every error reaches the
// user as one line on stderr.
func run(args []string, stdout, stderr io.Writer) int {
	return runIn(args, os.Stdin, stdout, stderr)
}

// runIn is run with stdin (pith propose reads its request there).
func runIn(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := newRootCommand()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	// Read-only commands map the session (internal/mapfile): a file cut
	// shorter in place under them is an error line here, not a crash.
	err := mapfile.Guard(root.Execute)
	if err != nil {
		// An error can quote a plugin or the session: escaped (termsafe).
		fmt.Fprintf(stderr, "pith: %s\n", termsafe.Line(oneLine(err)))
	}
	return exitCode(err)
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "pith",
		Short: "Session engine for coding agents: context, compaction, branch summaries, plugins",
		Long: `Pith reads and writes the session files of the pi coding agent. It builds the
context a model would see, compacts long sessions into structured summaries,
summarizes abandoned branches, and runs out-of-process hook plugins.

` + exitCodesHelp,
		Version:       version,
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
		newProposeCommand(),
		newLabelCommand(),
		newConfigCommand(),
		newPluginsCommand(),
		newServeCommand(),
		newViewCommand(),
		newExportCommand(),
		newImportCommand(),
		newVersionCommand(),
	)
	root.SetVersionTemplate("pith {{.Version}}\n")
	// Bare `pith` shows the help; an unknown subcommand is a usage error.
	root.Args = cobra.ArbitraryArgs
	root.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) > 0 {
			return usageError{unknownCommand(cmd, args[0])}
		}
		return cmd.Help()
	}
	markUsageErrors(root)
	addExamples(root)
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
