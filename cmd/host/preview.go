package main

import (
	"strings"
	"unicode/utf8"

	"github.com/pith-dev/pith/core/session"
)

// preview is the first line of a message, for tables and trees.
func preview(m session.Message, width int) string {
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
	return clipLine(s, width)
}

// clipLine keeps the first non-empty line, cut to width runes.
func clipLine(s string, width int) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = strings.TrimSpace(s[:i]) + " …"
	}
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) > width {
		r := []rune(s)
		s = string(r[:width-1]) + "…"
	}
	return s
}
