package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/pith-dev/pith/core/session"
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
			nodes := treeNodes(tree)
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

// treeNode is one entry in display order with what the views show of it.
type treeNode struct {
	Entry  *session.Entry
	Depth  int  // indentation level: grows only where the tree branches
	Fork   bool // first entry of a branch (a sibling exists)
	Labels []string
}

// treeNodes walks the tree depth-first in file order with an explicit
// stack (sessions can be 100 000 entries deep). A chain stays at one depth;
// each child of an entry with several children starts a deeper branch.
func treeNodes(tree *session.Tree) []treeNode {
	// A later label entry for a target replaces its label; an empty one
	// clears it, as in pi.
	labels := map[string][]string{}
	for _, e := range tree.Entries {
		if e.Type == session.TypeLabel {
			t := e.Get("targetId").String()
			if l := e.Get("label").String(); l != "" {
				labels[t] = []string{l}
			} else {
				delete(labels, t)
			}
		}
	}
	type item struct {
		e     *session.Entry
		depth int
		fork  bool
	}
	roots := tree.Roots()
	var stack []item
	for i := len(roots) - 1; i >= 0; i-- {
		stack = append(stack, item{roots[i], 0, len(roots) > 1})
	}
	out := make([]treeNode, 0, len(tree.Entries))
	seen := make(map[*session.Entry]bool, len(tree.Entries))
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[it.e] {
			continue
		}
		seen[it.e] = true
		out = append(out, treeNode{Entry: it.e, Depth: it.depth, Fork: it.fork, Labels: labels[it.e.ID]})
		kids := tree.Children(it.e.ID)
		if it.e.ID == "" {
			kids = nil
		}
		branch := len(kids) > 1
		for i := len(kids) - 1; i >= 0; i-- {
			d := it.depth
			if branch {
				d++
			}
			stack = append(stack, item{kids[i], d, branch})
		}
	}
	return out
}

// describe is the one-line text of an entry in the tree.
func describe(e *session.Entry) string {
	switch e.Type {
	case session.TypeMessage:
		m, ok := session.EntryMessage(e)
		if !ok {
			return "message"
		}
		return m.Role + ": " + preview(m, 70)
	case session.TypeCompaction:
		s := fmt.Sprintf("[compaction] kept from %s, %d tokens before", e.Get("firstKeptEntryId").String(), e.Get("tokensBefore").Int())
		if e.Get("fromHook").Bool() {
			s += ", from a plugin"
		}
		return s + ": " + clipLine(e.Get("summary").String(), 50)
	case session.TypeBranchSummary:
		s := "[branch summary] from " + e.Get("fromId").String()
		if e.Get("fromHook").Bool() {
			s += ", from a plugin"
		}
		return s + ": " + clipLine(e.Get("summary").String(), 50)
	case session.TypeModelChange:
		return "model → " + e.Get("provider").String() + "/" + e.Get("modelId").String()
	case session.TypeThinkingLevelChange:
		return "thinking → " + e.Get("thinkingLevel").String()
	case session.TypeLabel:
		return "label " + e.Get("targetId").String() + " = " + e.Get("label").String()
	case session.TypeCustomMessage:
		m, _ := session.EntryMessage(e)
		return "custom_message(" + e.Get("customType").String() + "): " + preview(m, 60)
	case session.TypeCustom:
		return "custom(" + e.Get("customType").String() + ")"
	case session.TypeSessionInfo:
		return "session name: " + e.Get("name").String()
	}
	return e.Type
}

func writeTreeText(w io.Writer, tree *session.Tree, nodes []treeNode) error {
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
		fmt.Fprintf(bw, "%s%s%s %s", mark, indent, n.Entry.ID, describe(n.Entry))
		if len(n.Labels) > 0 {
			fmt.Fprintf(bw, "  [label: %s]", strings.Join(n.Labels, ", "))
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

func writeTreeJSON(w io.Writer, tree *session.Tree, nodes []treeNode) error {
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
		j := treeNodeJSON{ID: e.ID, Type: e.Type, Role: e.Role(), Depth: n.Depth, Labels: n.Labels, OnPath: onPath[e], Text: describe(e)}
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
