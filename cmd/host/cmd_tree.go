package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/internal/entryview"
	"github.com/pith-dev/pith/internal/termsafe"
	"github.com/spf13/cobra"
)

func newTreeCommand() *cobra.Command {
	var asJSON bool
	var storeURL string
	var limits treeLimits
	cmd := &cobra.Command{
		Use:   "tree FILE | --store URL NAME",
		Short: "Show the entry tree: branches, the current leaf, labels, compactions and branch summaries",
		Long: `Prints every entry of the session depth-first in file order, one line each:
a chain stays at one indentation, each branch of a fork is indented one more
level. * marks the current leaf, │ the entries on its path.

A long session is thousands of lines: --limit N prints the first N entries
and one "… M more entries" line for the rest; --depth N hides the branches
nested deeper than N levels (0: none), each run of hidden entries shown as
one "… M more entries in deeper branches" line, but never an entry on the
path to the current leaf. The last line still counts every entry. With
--json, hidden entries are left out of "entries" and counted in
"omittedEntries".`,
		Args: positional([]arg{sessionArg}),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, tree, err := loadFrom(cmd, storeURL, args[0])
			if err != nil {
				return err
			}
			session.LogWarnings(warnLogger(cmd.ErrOrStderr()), args[0], session.CycleWarnings(tree))
			if limits.limit < 0 {
				return usageError{errors.New("--limit must be 0 (all) or more")}
			}
			nodes := entryview.Layout(tree)
			rows, hidden := limits.rows(tree, nodes)
			if asJSON {
				return writeTreeJSON(cmd.OutOrStdout(), tree, rows, hidden)
			}
			return writeTreeText(cmd.OutOrStdout(), tree, rows, len(nodes))
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	cmd.Flags().IntVar(&limits.depth, "depth", -1, "show branches nested at most N levels deep (0: no branch; the leaf's path is always shown; -1: all)")
	cmd.Flags().IntVar(&limits.limit, "limit", 0, "show at most N entries, the first ones (0: all)")
	addStoreFlag(cmd, &storeURL)
	return cmd
}

func writeTreeText(w io.Writer, tree *session.Tree, rows []treeRow, total int) error {
	bw := bufio.NewWriter(w)
	leaf := tree.Last()
	onPath := map[*session.Entry]bool{}
	for _, e := range tree.Path(leaf) {
		onPath[e] = true
	}
	for _, r := range rows {
		if r.node == nil {
			writeTreeMarker(bw, r)
			continue
		}
		n := r.node
		mark := "  "
		if n.Entry == leaf {
			mark = "* "
		} else if onPath[n.Entry] {
			mark = "│ "
		}
		indent := strings.Repeat("  ", n.Depth)
		if n.Fork {
			indent = indent[:max(0, len(indent)-2)] + "├─"
		}
		// Ids, texts and labels come from the session: escaped (termsafe).
		fmt.Fprintf(bw, "%s%s%s %s", mark, indent, termsafe.Line(n.Entry.ID), termsafe.Line(entryview.Describe(n.Entry)))
		if len(n.Labels) > 0 {
			fmt.Fprintf(bw, "  [label: %s]", termsafe.Line(strings.Join(n.Labels, ", ")))
		}
		if n.Entry == leaf {
			bw.WriteString("  ← leaf")
		}
		bw.WriteByte('\n')
	}
	fmt.Fprintf(bw, "\n%d entries; * marks the current leaf, │ its path\n", total)
	return bw.Flush()
}

// writeTreeMarker is the line standing for entries --depth or --limit hid.
func writeTreeMarker(bw *bufio.Writer, r treeRow) {
	noun := "entries"
	if r.hidden == 1 {
		noun = "entry"
	}
	if r.atEnd {
		fmt.Fprintf(bw, "  … %d more %s (--limit 0 shows all)\n", r.hidden, noun)
		return
	}
	fmt.Fprintf(bw, "  %s… %d more %s in deeper branches\n", strings.Repeat("  ", r.depth), r.hidden, noun)
}

type treeNodeJSON struct {
	ID       string   `json:"id"`
	ParentID *string  `json:"parentId"`
	Type     string   `json:"type"`
	Role     string   `json:"role,omitempty"`
	Depth    int      `json:"depth"`
	Labels   []string `json:"labels,omitempty"`
	OnPath   bool     `json:"onPath"`
	Text     string   `json:"text"`
	FromID   string   `json:"fromId,omitempty"`
	FromHook bool     `json:"fromHook,omitempty"`
}

func writeTreeJSON(w io.Writer, tree *session.Tree, rows []treeRow, hidden int) error {
	leaf := tree.Last()
	onPath := map[*session.Entry]bool{}
	for _, e := range tree.Path(leaf) {
		onPath[e] = true
	}
	out := struct {
		LeafID  string         `json:"leafId"`
		Entries []treeNodeJSON `json:"entries"`
		// OmittedEntries counts what --depth and --limit left out.
		OmittedEntries int `json:"omittedEntries,omitempty"`
	}{Entries: make([]treeNodeJSON, 0, len(rows)), OmittedEntries: hidden}
	if leaf != nil {
		out.LeafID = leaf.ID
	}
	for _, r := range rows {
		n := r.node
		if n == nil {
			continue
		}
		e := n.Entry
		j := treeNodeJSON{ID: e.ID, Type: e.Type, Role: e.Role(), Depth: n.Depth, Labels: n.Labels, OnPath: onPath[e], Text: entryview.Describe(e)}
		if e.ParentID != "" {
			p := e.ParentID
			j.ParentID = &p
		}
		if e.Type == session.TypeBranchSummary {
			j.FromID = e.Get("fromId").String()
		}
		if e.Type == session.TypeBranchSummary || e.Type == session.TypeCompaction {
			j.FromHook = e.Get("fromHook").Bool()
		}
		out.Entries = append(out.Entries, j)
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(out)
}
