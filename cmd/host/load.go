package main

import (
	"fmt"
	"io"

	"github.com/pith-dev/pith/core/session"
)

// loadSession reads a session file and reports skipped lines as warnings.
func loadSession(path string, stderr io.Writer) (*session.File, *session.Tree, error) {
	f, err := session.Load(path)
	if err != nil {
		return nil, nil, err
	}
	for _, w := range f.Warnings {
		fmt.Fprintf(stderr, "pith: warning: %s: %s\n", path, w)
	}
	return f, session.NewTree(f.Entries), nil
}

// leafFor resolves --leaf: "" means the default (the last entry); an id
// that is not in the file is an error here, unlike BuildContext's silent
// fallback, because a user who names a leaf means that one.
func leafFor(path string, tree *session.Tree, leaf string) (string, error) {
	if leaf == "" {
		return session.LeafDefault, nil
	}
	if !tree.Has(leaf) {
		return "", fmt.Errorf("%s: no entry with id %q", path, leaf)
	}
	return leaf, nil
}
