package main

import (
	"bufio"
	"encoding/json"
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
	cmd := &cobra.Command{
		Use:   "tree FILE | --store URL NAME",
		Short: "Show the entry tree: branches, the current leaf, labels, compactions and branch summaries",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, tree, err := loadFrom(cmd, storeURL, args[0])
			if err != nil {
				return err
			}
			session.LogWarnings(warnLogger(cmd.ErrOrStderr()), args[0], session.CycleWarnings(tree))
			nodes := entryview.Layout(tree)
			if asJSON {
				return writeTreeJSON(cmd.OutOrStdout(), tree, nodes)
			}
			return writeTreeText(cmd.OutOrStdout(), tree, nodes)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	addStoreFlag(cmd, &storeURL)
	return cmd
}

func writeTreeText(w io.Writer, tree *session.Tree, nodes []entryview.Node) error {
	bw := bufio.NewWriter(w)
	leaf := tree.Last()
	onPath := map[*session.Entry]bool{}
	for _, e := range tree.Path(leaf) {
		onPath[e] = true
	}
	for _, n := range nodes {
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
	fmt.Fprintf(bw, "\n%d entries; * marks the current leaf, │ its path\n", len(nodes))
	return bw.Flush()
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

func writeTreeJSON(w io.Writer, tree *session.Tree, nodes []entryview.Node) error {
	leaf := tree.Last()
	onPath := map[*session.Entry]bool{}
	for _, e := range tree.Path(leaf) {
		onPath[e] = true
	}
	out := struct {
		LeafID  string         `json:"leafId"`
		Entries []treeNodeJSON `json:"entries"`
	}{Entries: make([]treeNodeJSON, 0, len(nodes))}
	if leaf != nil {
		out.LeafID = leaf.ID
	}
	for _, n := range nodes {
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
