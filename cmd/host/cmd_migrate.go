package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/store/files"
	"github.com/spf13/cobra"
)

func newMigrateCommand() *cobra.Command {
	var (
		out      string
		inPlace  bool
		force    bool
		storeURL string
	)
	cmd := &cobra.Command{
		Use:   "migrate FILE | --store URL NAME",
		Short: "Write a session file in the current format (v3)",
		Long: `Upgrades a v1 or v2 session to v3: ids and parent links for v1 entries,
firstKeptEntryIndex → firstKeptEntryId, hookMessage → custom. Reading never
changes a file; this command writes the result to --out (an existing file
only with --force), over FILE with --in-place (also when --out names FILE
itself), or to standard output.
Files are written atomically. With
--store, NAME is a session of that store, and --in-place rewrites it there
under its lease.`,
		Args: positional([]arg{sessionArg}),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := args[0]
			if out != "" && inPlace {
				return errors.New("--out and --in-place cannot be used together")
			}
			if out != "" && storeURL == "" && sameFile(path, out) {
				// The result goes over the session itself: a change of
				// the session, so through its write protocol.
				inPlace, out = true, ""
			}
			if inPlace && storeURL != "" {
				return migrateStored(cmd, storeURL, path)
			}
			if inPlace {
				// A change of the session like any other: under its lock,
				// keeping lines appended meanwhile, replacing a link's target.
				store, err := files.Open(path, files.Options{Logger: warnLogger(cmd.ErrOrStderr())})
				if err != nil {
					return err
				}
				defer store.Close()
				n := len(store.File().Entries)
				changed, err := store.Migrate()
				if err != nil {
					return err
				}
				if !changed {
					fmt.Fprintf(cmd.ErrOrStderr(), "%s: already version 3; nothing was changed\n", path)
					return nil
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "%s: %d entries from an older version written as version 3 in place\n", path, n)
				return nil
			}
			f, _, err := loadFrom(cmd, storeURL, path)
			if err != nil {
				return err
			}
			from := "version 3"
			if f.Migrated {
				from = "an older version"
			}
			if out == "" {
				return f.Encode(cmd.OutOrStdout())
			}
			if err := refuseOverwrite(out, force); err != nil {
				return err
			}
			if err := files.WriteAtomic(out, f.Encode); err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "%s: %d entries from %s written as version 3 to %s\n", path, len(f.Entries), from, out)
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "write the result to this file")
	cmd.Flags().BoolVar(&inPlace, "in-place", false, "replace FILE with the result")
	cmd.Flags().BoolVar(&force, "force", false, "let --out replace an existing file")
	addStoreFlag(cmd, &storeURL)
	return cmd
}

// migrateStored rewrites the session name of the store in the current
// format, through the Backend's one rewrite (under the lease).
func migrateStored(cmd *cobra.Command, storeURL, name string) error {
	ctx := cmd.Context()
	b, err := openBackend(ctx, storeURL, name, warnLogger(cmd.ErrOrStderr()))
	if err != nil {
		return err
	}
	defer b.close()
	n, changed := 0, false
	err = b.Update(func(tx *session.Tx) (*session.File, error) {
		if !tx.File().Migrated {
			return nil, nil
		}
		n, changed = len(tx.File().Entries), true
		return tx.File(), nil
	})
	if err != nil {
		return err
	}
	if !changed {
		fmt.Fprintf(cmd.ErrOrStderr(), "%s: already version 3; nothing was changed\n", name)
		return nil
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "%s: %d entries from an older version written as version 3 in place\n", name, n)
	return nil
}

// refuseOverwrite keeps --out from replacing a file that exists, unless
// forced: the file there may be the only copy of something else. It
// exits 1, as a failure: the command line was right, the disk was not
// as expected.
func refuseOverwrite(out string, force bool) error {
	if force {
		return nil
	}
	if _, err := os.Lstat(out); err == nil {
		return fmt.Errorf("--out %s: the file exists; --force replaces it", out)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("--out %s: %w", out, err)
	}
	return nil
}

// sameFile reports whether the two paths name the same existing file,
// following links.
func sameFile(a, b string) bool {
	sa, err := os.Stat(a)
	if err != nil {
		return false
	}
	sb, err := os.Stat(b)
	return err == nil && os.SameFile(sa, sb)
}
