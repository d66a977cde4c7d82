package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/pith-dev/pith/config"
	"github.com/pith-dev/pith/core/branch"
	"github.com/pith-dev/pith/core/compaction"
	"github.com/pith-dev/pith/core/engine"
	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/store"
	"github.com/spf13/cobra"
)

// The exit codes of every command, documented in the root command's help
// and docs/cli.md. A script branches on them; the message on stderr is for
// people.
const (
	exitOK          = 0
	exitFailure     = 1   // anything not listed below
	exitUsage       = 2   // bad flags or arguments, invalid or missing configuration
	exitNothing     = 3   // nothing to compact (or summarize)
	exitCancelled   = 4   // a plugin cancelled the compaction or navigation
	exitBusy        = 5   // another host is compacting or pruning the stored session, or changed it meanwhile: try again
	exitInterrupted = 130 // SIGINT or SIGTERM: stopped, nothing half-written
)

const exitCodesHelp = `Exit codes:
  0    success
  1    failure not listed below
  2    usage error (flags, arguments), invalid configuration, or a
       configuration file (--config, $PITH_CONFIG) that does not exist
  3    nothing to compact or summarize
  4    cancelled by a plugin
  5    a stored session is busy: another host is compacting or pruning it,
       or changed it meanwhile (nothing was written; try again)
  130  interrupted (SIGINT/SIGTERM)`

// usageError marks an error found before a command ran: a flag or an
// argument cobra rejected.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// exitCode maps an error of a command to the process's exit code. It is
// the one place that does: commands return sentinel errors (or an
// exitError for a code of their own) and never call os.Exit.
func exitCode(err error) int {
	var ee *exitError
	var ue usageError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ee):
		return ee.code
	case errors.As(err, &ue), errors.Is(err, config.ErrInvalid), errors.Is(err, config.ErrUnsupportedFormat),
		errors.Is(err, config.ErrNotFound):
		// A configuration file that is missing (the user named it: the
		// default location is read only when it exists) or invalid is
		// the user's input, as a bad flag is.
		return exitUsage
	case errors.Is(err, engine.ErrCancelled), errors.Is(err, branch.ErrCancelled):
		return exitCancelled
	case errors.Is(err, engine.ErrCompactingElsewhere), errors.Is(err, session.ErrLeaseHeld),
		errors.Is(err, store.ErrLeaseLost), errors.Is(err, session.ErrConflict):
		// Before the interrupted case: a compaction stopped by a lost
		// lease is aborted, but nobody interrupted it.
		return exitBusy
	case errors.Is(err, context.Canceled), errors.Is(err, engine.ErrAborted):
		return exitInterrupted
	case errors.Is(err, compaction.ErrNothingToCompact), errors.Is(err, branch.ErrNothingToSummarize):
		return exitNothing
	}
	return exitFailure
}

// markUsageErrors makes every error cobra finds before a command runs (an
// unknown flag, a wrong number of arguments, an unknown command) a
// usageError, so it exits 2 whichever command it came from.
func markUsageErrors(root *cobra.Command) {
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if args := c.Args; args != nil {
			c.Args = func(cmd *cobra.Command, a []string) error {
				if err := args(cmd, a); err != nil {
					return usageError{err}
				}
				return nil
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// invalidConfig is a message of its own that still matches
// config.ErrInvalid, so a command's summary of configuration problems
// exits 2 like the problems themselves.
func invalidConfig(format string, args ...any) error {
	return configInvalidError{fmt.Sprintf(format, args...)}
}

type configInvalidError struct{ msg string }

func (e configInvalidError) Error() string { return e.msg }
func (e configInvalidError) Unwrap() error { return config.ErrInvalid }

// configRejected is a command's one-line summary of a configuration that
// did not load, printed after its problems: it exits as err does (2 for a
// missing or invalid file, 1 for one that could not be read).
func configRejected(summary string, err error) error {
	return configRejectedError{summary, err}
}

type configRejectedError struct {
	summary string
	err     error
}

func (e configRejectedError) Error() string { return e.summary }
func (e configRejectedError) Unwrap() error { return e.err }
