package entryview

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/pith-dev/pith/core/session"
)

// Preview is the first line of a message, for tables and trees.
func Preview(m session.Message, width int) string {
	if s, ok := fastPreview(m, width); ok {
		return ClipLine(s, width)
	}
	return decodedPreview(m, width)
}

// decodedPreview is Preview from the whole message decoded: for what
// fastPreview cannot vouch for, and the reference it is tested against.
func decodedPreview(m session.Message, width int) string {
	am, err := m.Decode()
	if err != nil {
		return "(unreadable message)"
	}
	var s string
	switch m.Role {
	case session.RoleBashExecution:
		s = "$ " + am.Command
	case session.RoleCompactionSummary, session.RoleBranchSummary:
		s = am.Summary
	default:
		var parts []string
		for _, b := range am.ContentBlocks() {
			switch b.Type {
			case "text":
				parts = append(parts, b.Text)
			case "toolCall":
				parts = append(parts, "→ "+b.Name+"("+string(b.Arguments)+")")
			case "image":
				parts = append(parts, "[image]")
			}
		}
		s = strings.Join(parts, " ")
		if s == "" && am.ErrorMessage != "" {
			s = "error: " + am.ErrorMessage
		}
	}
	return ClipLine(s, width)
}

// ClipLine keeps the first non-empty line, cut to width runes.
func ClipLine(s string, width int) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = strings.TrimSpace(s[:i]) + " …"
	}
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) > width {
		if width < 1 {
			return "" // no room even for the ellipsis
		}
		r := []rune(s)
		s = string(r[:width-1]) + "…"
	}
	return s
}

// Node is one entry in display order with what the views show of it.
type Node struct {
	Entry  *session.Entry
	Depth  int  // indentation level: grows only where the tree branches
	Fork   bool // first entry of a branch (a sibling exists)
	Labels []string
}

// Layout walks the tree depth-first in file order with an explicit
// stack (sessions can be 100 000 entries deep). A chain stays at one depth;
// each child of an entry with several children starts a deeper branch.
func Layout(tree *session.Tree) []Node {
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
	out := make([]Node, 0, len(tree.Entries))
	seen := make(map[*session.Entry]bool, len(tree.Entries))
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[it.e] {
			continue
		}
		seen[it.e] = true
		out = append(out, Node{Entry: it.e, Depth: it.depth, Fork: it.fork, Labels: labels[it.e.ID]})
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

// Describe is the one-line text of an entry in the tree.
func Describe(e *session.Entry) string {
	switch e.Type {
	case session.TypeMessage:
		m, ok := session.EntryMessage(e)
		if !ok {
			return "message"
		}
		return m.Role + ": " + Preview(m, 70)
	case session.TypeCompaction:
		s := fmt.Sprintf("[compaction] kept from %s, %d tokens before", e.Get("firstKeptEntryId").String(), e.Get("tokensBefore").Int())
		if e.Get("fromHook").Bool() {
			s += ", from a plugin"
		}
		return s + ": " + ClipLine(e.Get("summary").String(), 50)
	case session.TypeBranchSummary:
		s := "[branch summary] from " + e.Get("fromId").String()
		if e.Get("fromHook").Bool() {
			s += ", from a plugin"
		}
		return s + ": " + ClipLine(e.Get("summary").String(), 50)
	case session.TypeModelChange:
		return "model → " + e.Get("provider").String() + "/" + e.Get("modelId").String()
	case session.TypeThinkingLevelChange:
		return "thinking → " + e.Get("thinkingLevel").String()
	case session.TypeLabel:
		return "label " + e.Get("targetId").String() + " = " + e.Get("label").String()
	case session.TypeCustomMessage:
		m, _ := session.EntryMessage(e)
		return "custom_message(" + e.Get("customType").String() + "): " + Preview(m, 60)
	case session.TypeCustom:
		return "custom(" + e.Get("customType").String() + ")"
	case session.TypeSessionInfo:
		return "session name: " + e.Get("name").String()
	}
	return e.Type
}
