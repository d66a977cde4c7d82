package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/pith-dev/pith/client"
	"github.com/pith-dev/pith/core/branch"
	"github.com/pith-dev/pith/core/compaction"
	"github.com/pith-dev/pith/core/engine"
	"github.com/pith-dev/pith/core/explore"
	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/internal/netaddr"
	"github.com/spf13/pflag"
)

// A CLI compaction or navigation starts its plugins and stops them again:
// each is a process that costs more CPU than the operation itself
// (docs/plugins.md, "Starting and stopping plugins"). With --serve ADDR the
// command asks a running `pith serve` instead, whose plugins are started
// once for all its operations: this process only dials, asks and prints,
// with the output and exit codes of the same operation run here.

// serveOnly are the flags that mean something with --serve, beside the
// command's own (checkServeFlags' keep). The others set the policy of an
// operation this process runs; with --serve the daemon's configuration
// decides, and a flag that would be ignored is refused instead, so that
// nobody believes it is in force.
var serveOnly = []string{"serve", "serve-ca", "verbose"}

// checkServeFlags refuses, with --serve, every flag set that is not in
// keep or serveOnly; a --serve-ca without --serve is refused too.
func checkServeFlags(fl *pflag.FlagSet, serve string, keep ...string) error {
	if serve == "" {
		return usageError{errors.New("--serve-ca: only with --serve")}
	}
	var refused []string
	fl.Visit(func(f *pflag.Flag) {
		if !slices.Contains(serveOnly, f.Name) && !slices.Contains(keep, f.Name) {
			refused = append(refused, "--"+f.Name)
		}
	})
	if len(refused) > 0 {
		return usageError{fmt.Errorf("%s: not with --serve, where the daemon's configuration decides (set it there, or run the command here without --serve)", strings.Join(refused, ", "))}
	}
	return nil
}

// addServeFlags registers --serve and --serve-ca; what names the daemon's
// operation ("compact", "navigate") is for their help.
func addServeFlags(fl *pflag.FlagSet, what string, serve, serveCA *string) {
	fl.StringVar(serve, "serve", "", what+" the session NAME in the running `pith serve` at ADDR (host:port or unix:/path), with its configuration and its plugins, already started")
	fl.StringVar(serveCA, "serve-ca", "", "with --serve: CA certificate (PEM) that verifies the daemon's TLS certificate")
}

// dialServe connects to the daemon at addr: in clear text to loopback or
// a unix socket, over TLS (the system's roots, or caFile's) to anything
// else. PITH_TOKEN, when set, is the bearer token; it is read from the
// environment only, never a flag that every user of the machine sees in
// the process list.
func dialServe(addr, caFile string) (*client.Client, error) {
	var opts []client.Option
	switch {
	case caFile != "":
		opts = append(opts, client.WithTLSFiles(caFile, "", ""))
	case !netaddr.Loopback(addr):
		opts = append(opts, client.WithTLS(&tls.Config{MinVersion: tls.VersionTLS12}))
	}
	if tok := strings.TrimSpace(os.Getenv("PITH_TOKEN")); tok != "" {
		opts = append(opts, client.WithToken(tok))
	}
	return client.Dial(addr, opts...)
}

// runCompactServe is `pith compact --serve ADDR NAME`: NAME is the
// session's path below the daemon's sessions.root, as OpenSession names
// it. The output, the exit codes and the session's state after a failure
// are those of a compaction run here.
func runCompactServe(ctx context.Context, stdout, stderr io.Writer, name string, f compactFlags) error {
	log := cliLogger(stderr, f.verbose)
	c, s, err := openServe(ctx, f.serve, f.serveCA, name)
	if err != nil {
		return err
	}
	defer c.Close()
	prog := startProgress(stderr, "compacting in the daemon at "+f.serve)
	res, err := s.Compact(ctx, f.instructions, func(ev client.Event) {
		if p := ev.Progress; p != nil {
			prog.line(workerTurnLine(&explore.Progress{Turn: p.Turn, MaxTurns: p.MaxTurns, Tools: p.Tools, Tokens: p.Tokens, Max: p.Max}))
			return
		}
		log.Debug("daemon event", "kind", ev.Kind, "plugin", ev.Plugin, "error", ev.Error)
	})
	prog.done()
	if err != nil {
		return serveError(ctx, "compaction", f.serve, name, err)
	}
	out := &engine.Result{
		Reason: engine.Reason(res.Reason), Entry: &session.Entry{ID: res.EntryID, Raw: res.Entry},
		Summary: res.Summary, ShortSummary: res.ShortSummary, FirstKeptEntryID: res.FirstKeptEntryID,
		TokensBefore: res.TokensBefore, TokensAfter: res.TokensAfter, MessagesSummarized: res.MessagesSummarized,
		SplitTurn: res.SplitTurn, FromHook: res.FromHook, Plugin: res.Plugin, Strategy: res.Strategy,
	}
	if len(res.Explore) > 0 {
		out.Explore = new(explore.Stats)
		if err := json.Unmarshal(res.Explore, out.Explore); err != nil {
			return fmt.Errorf("%s (daemon %s): the explore figures it sent: %w", name, f.serve, err)
		}
	}
	if res.AutoReadEntryID != "" {
		out.AutoReadEntry = &session.Entry{ID: res.AutoReadEntryID}
	}
	return printCompaction(stdout, out, f.asJSON)
}

// openServe dials the daemon at addr and opens its session name. The
// session is left open: the daemon shares it with every client (an agent
// may be driving it and watching its events, which CloseSession would
// end) and closes it once idle (server.idleTimeout).
func openServe(ctx context.Context, addr, caFile, name string) (*client.Client, *client.Session, error) {
	c, err := dialServe(addr, caFile)
	if err != nil {
		return nil, nil, usageError{err}
	}
	s, err := c.Open(ctx, name)
	if err != nil {
		c.Close()
		return nil, nil, serveError(ctx, "open", addr, name, err)
	}
	return c, s, nil
}

// refusals are the local sentinels the daemon's reasons for refusing
// stand for (session.proto's ErrorReason, which the client matches as
// its own errors): each gives the exit code the command run here would
// (exitCode).
var refusals = []struct{ reason, local error }{
	{client.ErrNothingToCompact, compaction.ErrNothingToCompact},
	{client.ErrNothingToSummarize, branch.ErrNothingToSummarize},
	{client.ErrCancelledByPlugin, engine.ErrCancelled},
	{client.ErrConflict, session.ErrConflict},
	{client.ErrBusyElsewhere, session.ErrLeaseHeld},
}

// serveError is the daemon's refusal as the same command's error run
// here, wrapping the local sentinel that gives its exit code. op names
// the operation for an interruption.
func serveError(ctx context.Context, op, addr, name string, err error) error {
	msg := err.Error()
	where := fmt.Sprintf("%s (daemon %s)", name, addr)
	if ctx.Err() != nil {
		// The daemon ends the operation when the call is cancelled, but
		// one it had just saved stays saved: the answer is lost, not the
		// write, so this does not claim the session is unchanged.
		return fmt.Errorf("%s: %s interrupted; the daemon stops it unless it had already saved it (read the session to know): %w", where, op, ctx.Err())
	}
	for _, r := range refusals {
		if errors.Is(err, r.reason) {
			return fmt.Errorf("%s: %w", where, withText(r.local, msg))
		}
	}
	switch {
	case errors.Is(err, client.ErrAborted):
		// Nothing was written, whatever the reason: busy, as here.
		return fmt.Errorf("%s: %w", where, withText(session.ErrLeaseHeld, msg))
	case errors.Is(err, client.ErrUnavailable):
		return fmt.Errorf("daemon %s: %w (is `pith serve` running there?)", addr, err)
	case errors.Is(err, client.ErrInvalidArgument):
		return usageError{fmt.Errorf("%s: %w", where, err)}
	}
	return fmt.Errorf("%s: %w", where, err)
}

// sentinelText is a local sentinel (for errors.Is and the exit code) that
// reads as the daemon's own message.
type sentinelText struct {
	sentinel error
	text     string
}

func withText(sentinel error, text string) error { return sentinelText{sentinel, text} }

func (e sentinelText) Error() string { return e.text }
func (e sentinelText) Unwrap() error { return e.sentinel }

// runNavigateServe is `pith navigate --serve ADDR NAME --to ID`.
func runNavigateServe(ctx context.Context, stdout, stderr io.Writer, name string, f navigateFlags, mode engine.SummarizeMode) error {
	c, s, err := openServe(ctx, f.serve, f.serveCA, name)
	if err != nil {
		return err
	}
	defer c.Close()
	prog := startProgress(stderr, "navigating in the daemon at "+f.serve)
	res, err := s.Navigate(ctx, f.to, client.NavigateOptions{
		Summarize: mode == engine.SummarizeAlways, NoSummarize: mode == engine.SummarizeNever,
		CustomInstructions: f.instructions, Label: f.label,
	})
	prog.done()
	if err != nil {
		return serveError(ctx, "navigation", f.serve, name, err)
	}
	out := &branch.NavigateResult{
		NoOp: res.NoOp, TargetID: res.TargetID, OldLeafID: res.OldLeafID, PositionID: res.PositionID, NewLeafID: res.NewLeafID,
		EntriesSummarized: res.EntriesSummarized, EditorText: res.EditorText, HasEditorText: res.HasEditorText, FromHook: res.FromHook,
	}
	if len(res.SummaryEntry) > 0 {
		e, err := session.ParseEntry(res.SummaryEntry)
		if err != nil {
			return fmt.Errorf("%s (daemon %s): the branch summary entry it sent: %w", name, f.serve, err)
		}
		out.SummaryEntry = e
	}
	return printNavigation(stdout, out, f.asJSON)
}
