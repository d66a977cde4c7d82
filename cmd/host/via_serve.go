package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/pith-dev/pith/client"
	"github.com/pith-dev/pith/core/compaction"
	"github.com/pith-dev/pith/core/engine"
	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/internal/netaddr"
	"github.com/spf13/pflag"
)

// A CLI compaction starts its plugins and stops them again: each is a
// process that costs more CPU than the compaction itself (docs/plugins.md,
// "What a plugin costs"). `pith compact --serve ADDR NAME` asks a running
// `pith serve` instead, whose plugins are started once for all its
// compactions: this process only dials, asks and prints.

// viaServeFlags are the flags that mean something with --serve. The others
// set the policy of a compaction this process runs; with --serve the
// daemon's configuration decides, and a flag that would be ignored is
// refused instead, so that nobody believes it is in force.
var viaServeFlags = map[string]bool{"serve": true, "serve-ca": true, "instructions": true, "json": true, "verbose": true}

// checkServeFlags refuses, with --serve, every flag the daemon decides.
func checkServeFlags(fl *pflag.FlagSet) error {
	var refused []string
	fl.Visit(func(f *pflag.Flag) {
		if !viaServeFlags[f.Name] {
			refused = append(refused, "--"+f.Name)
		}
	})
	if len(refused) > 0 {
		return usageError{fmt.Errorf("%s: not with --serve, where the daemon's configuration decides (set it there, or compact the file here without --serve)", strings.Join(refused, ", "))}
	}
	return nil
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
	c, err := dialServe(f.serve, f.serveCA)
	if err != nil {
		return usageError{err}
	}
	defer c.Close()
	s, err := c.Open(ctx, name)
	if err != nil {
		return serveError(ctx, f.serve, name, err)
	}
	prog := startProgress(stderr, "compacting in the daemon at "+f.serve)
	res, err := s.Compact(ctx, f.instructions, func(ev client.Event) {
		log.Debug("daemon event", "kind", ev.Kind, "plugin", ev.Plugin, "error", ev.Error)
	})
	prog.done()
	// The daemon closes an idle session by itself; closing it here only
	// frees it sooner, and a failure to do so changes nothing written.
	_ = s.Close(context.WithoutCancel(ctx))
	if err != nil {
		return serveError(ctx, f.serve, name, err)
	}
	return printCompaction(stdout, &engine.Result{
		Reason: engine.Reason(res.Reason), Entry: &session.Entry{ID: res.EntryID, Raw: res.Entry},
		Summary: res.Summary, ShortSummary: res.ShortSummary, FirstKeptEntryID: res.FirstKeptEntryID,
		TokensBefore: res.TokensBefore, TokensAfter: res.TokensAfter, MessagesSummarized: res.MessagesSummarized,
		SplitTurn: res.SplitTurn, FromHook: res.FromHook, Plugin: res.Plugin, Strategy: res.Strategy,
	}, f.asJSON)
}

// serveError is the daemon's refusal as the same command's error run
// here: its exit code (exitCode) comes from the local sentinel it wraps.
// The daemon sends a gRPC code and its own message; the message starts
// with the words of the engine's sentinel, which is how a refusal for
// nothing to compact is told from a plugin's veto (both
// FAILED_PRECONDITION).
func serveError(ctx context.Context, addr, name string, err error) error {
	msg := err.Error()
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("%s: compaction interrupted; the daemon stops it and the session is unchanged: %w", name, ctx.Err())
	case errors.Is(err, client.ErrFailedPrecondition) && strings.Contains(msg, compaction.ErrNothingToCompact.Error()):
		return fmt.Errorf("%s (daemon %s): %w", name, addr, withText(compaction.ErrNothingToCompact, msg))
	case errors.Is(err, client.ErrFailedPrecondition) && strings.Contains(msg, engine.ErrCancelled.Error()):
		return fmt.Errorf("%s (daemon %s): %w", name, addr, withText(engine.ErrCancelled, msg))
	case errors.Is(err, client.ErrAborted):
		return fmt.Errorf("%s (daemon %s): %w", name, addr, withText(session.ErrLeaseHeld, msg))
	case errors.Is(err, client.ErrUnavailable):
		return fmt.Errorf("daemon %s: %w (is `pith serve` running there?)", addr, err)
	case errors.Is(err, client.ErrInvalidArgument), errors.Is(err, client.ErrUnauthenticated):
		return usageError{fmt.Errorf("%s (daemon %s): %w", name, addr, err)}
	}
	return fmt.Errorf("%s (daemon %s): %w", name, addr, err)
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
