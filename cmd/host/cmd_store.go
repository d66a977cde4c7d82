package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/store"
	"github.com/pith-dev/pith/store/files"
	"github.com/pith-dev/pith/store/postgres"
)

// openStoreURL opens the store a --store URL names: postgres://… (or
// postgresql://…) for PostgreSQL, file:DIR or a plain directory for the
// files store.
func openStoreURL(ctx context.Context, url string) (store.Store, error) {
	switch {
	case strings.HasPrefix(url, "postgres://"), strings.HasPrefix(url, "postgresql://"):
		return postgres.Open(ctx, url)
	case url == "":
		return nil, errors.New("--store is required: a postgres:// URL or a sessions directory")
	default:
		dir := strings.TrimPrefix(strings.TrimPrefix(url, "file://"), "file:")
		return files.OpenStore(dir, files.Options{})
	}
}

func newExportCommand() *cobra.Command {
	var storeURL, out string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "export --store URL NAME",
		Short: "Write a stored session's JSONL, byte for byte, to stdout or --out FILE",
		Long: `Reads the session NAME (a path such as team/s1.jsonl) from the store and
writes its exact bytes: exporting what pith import stored gives back the
file that was imported. --store is a postgres:// URL or a sessions
directory. --out replaces FILE atomically. --json (with --out: without it
the session's bytes are the output) prints what was written as one JSON
object: name, out, bytes.`,
		Args: positional([]arg{{"NAME", "the stored session to export"}}),
		RunE: func(cmd *cobra.Command, args []string) error {
			if asJSON && out == "" {
				return usageError{errors.New("--json needs --out: without it the session's bytes are the output")}
			}
			ctx := cmd.Context()
			st, err := openStoreURL(ctx, storeURL)
			if err != nil {
				return err
			}
			defer st.Close()
			data, err := st.Export(ctx, args[0])
			if err != nil {
				return err
			}
			if out == "" {
				_, err := cmd.OutOrStdout().Write(data)
				return err
			}
			err = files.WriteAtomic(out, func(w io.Writer) error {
				_, err := w.Write(data)
				return err
			})
			if err != nil || !asJSON {
				return err
			}
			return writeJSON(cmd.OutOrStdout(), exportJSON{Name: args[0], Out: out, Bytes: len(data)})
		},
	}
	cmd.Flags().StringVar(&storeURL, "store", "", "the store: a postgres:// URL or a sessions directory")
	cmd.Flags().StringVar(&out, "out", "", "write to FILE instead of stdout")
	cmd.Flags().BoolVar(&asJSON, "json", false, "with --out, print one JSON object: name, out, bytes")
	return cmd
}

func newImportCommand() *cobra.Command {
	var storeURL string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "import --store URL FILE NAME",
		Short: "Store a session file under NAME, byte for byte",
		Long: `Stores the pi session FILE as the session NAME (a path such as
team/s1.jsonl), keeping its exact bytes; an existing NAME is refused.
--store is a postgres:// URL or a sessions directory.`,
		Args: positional([]arg{{"FILE", "the session file to import"}, {"NAME", "the name to store it under"}}),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			data, err := os.ReadFile(args[0])
			if err != nil {
				return err
			}
			st, err := openStoreURL(ctx, storeURL)
			if err != nil {
				return err
			}
			defer st.Close()
			if err := st.Create(ctx, args[1], data); err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), importJSON{File: args[0], Name: args[1], Bytes: len(data)})
			}
			fmt.Fprintf(cmd.OutOrStdout(), "imported %s as %s (%d bytes)\n", args[0], args[1], len(data))
			return nil
		},
	}
	cmd.Flags().StringVar(&storeURL, "store", "", "the store: a postgres:// URL or a sessions directory")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object: file, name, bytes")
	return cmd
}

// addStoreFlag gives a command --store: with it, the FILE argument is a
// session's name in that store, so operators inspect and change a shared
// session with the same tools.
func addStoreFlag(cmd *cobra.Command, url *string) {
	cmd.Flags().StringVar(url, "store", "", "work on the session NAME in this store (a postgres:// URL or a sessions directory) instead of FILE")
}

// openedSession is a session a command changes: a file, or a session of
// a --store.
type openedSession struct {
	session.Backend
	// stored is the store of a --store session, nil for a file.
	stored store.Store
	close  func()
}

// cliHolder names this command in a store's leases: host name and pid
// for whoever reads the holder, and random bytes, since two containers
// that share the host's name each run pith as pid 1 of their own pid
// namespace, and a shared name would let the second renew the first's
// lease and work beside it.
func cliHolder() string {
	host, _ := os.Hostname()
	var b [4]byte
	rand.Read(b[:])
	return fmt.Sprintf("pith-cli@%s/%d/%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

// openBackend opens the session file arg, or with storeURL the session
// named arg in that store: the one way every changing command opens a
// session. close releases it; call it on every path.
func openBackend(ctx context.Context, storeURL, arg string, log hclog.Logger) (*openedSession, error) {
	if storeURL == "" {
		st, err := files.Open(arg, files.Options{Logger: log})
		if err != nil {
			return nil, err
		}
		return &openedSession{Backend: st, close: func() { st.Close() }}, nil
	}
	st, err := openStoreURL(ctx, storeURL)
	if err != nil {
		return nil, err
	}
	h, err := store.OpenSession(ctx, st, arg, store.SessionOptions{Holder: cliHolder(), Logger: log})
	if err != nil {
		st.Close()
		return nil, err
	}
	return &openedSession{Backend: h, stored: st, close: func() { st.Close() }}, nil
}

// migrateHint is how to migrate the session of arg in place.
func migrateHint(storeURL, arg string) string {
	if storeURL != "" {
		return "run `pith migrate --in-place --store URL " + arg + "` first"
	}
	return "run `pith migrate --in-place " + arg + "` first"
}

// loadFrom is loadSession for a file, or a Load from the store storeURL.
func loadFrom(cmd *cobra.Command, storeURL, arg string) (*session.File, *session.Tree, error) {
	ctx := cmd.Context()
	return loadFromTo(ctx, cmd.ErrOrStderr(), storeURL, arg)
}

// loadFromTo is loadFrom with warnings written to stderr.
func loadFromTo(ctx context.Context, stderr io.Writer, storeURL, arg string) (*session.File, *session.Tree, error) {
	if storeURL == "" {
		return loadSession(arg, stderr)
	}
	st, err := openStoreURL(ctx, storeURL)
	if err != nil {
		return nil, nil, err
	}
	defer st.Close()
	f, err := st.Load(ctx, arg)
	if err != nil {
		return nil, nil, err
	}
	session.LogWarnings(warnLogger(stderr), arg, f.Warnings)
	return f, session.NewTree(f.Entries), nil
}
