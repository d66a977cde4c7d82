package main

import (
	"fmt"
	"io"

	"github.com/pith-dev/pith/core/session"
)

// loadSession reads a session file and reports skipped lines as warnings.
// Commands that walk the tree report parentId loops themselves (see
// session.CycleWarnings): finding every loop costs an id index that
// `pith context` does not otherwise need.
func loadSession(path string, stderr io.Writer) (*session.File, *session.Tree, error) {
	return loadSessionWith(path, stderr, session.LoadOptions{})
}

// loadSessionWith is loadSession with the read and the parse chosen by opt.
func loadSessionWith(path string, stderr io.Writer, opt session.LoadOptions) (*session.File, *session.Tree, error) {
	f, err := session.LoadWith(path, opt)
	if err != nil {
		return nil, nil, err
	}
	session.LogWarnings(warnLogger(stderr), path, f.Warnings)
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
