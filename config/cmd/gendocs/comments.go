package main

import (
	"regexp"
	"strings"
)

// keyLine is a line of the example file that sets a key, its indentation
// and whether it starts a list item ("- name: …").
var keyLine = regexp.MustCompile(`^( *)(- )?([A-Za-z][A-Za-z0-9]*):( |$)(.*)$`)

// exampleComments reads the meaning of every key from the example file: its
// trailing comment, or else the comment lines just above it. Entries of a
// list (plugins, candidates, tokens) are shown there as commented-out
// examples; those lines count too, so a key of a plugin entry is found as
// "plugins[].timeout".
func exampleComments(data []byte) map[string]string {
	type level struct {
		indent int
		key    string
	}
	var stack []level
	var head []string
	out := map[string]string{}
	for _, raw := range strings.Split(string(data), "\n") {
		line := raw
		trimmed := strings.TrimSpace(line)
		if trimmed == "" {
			head = nil
			continue
		}
		if strings.HasPrefix(trimmed, "#") {
			body := strings.TrimPrefix(strings.TrimPrefix(trimmed, "#"), " ")
			if !keyLine.MatchString(body) {
				head = append(head, body)
				continue
			}
			line = body
		}
		m := keyLine.FindStringSubmatch(line)
		if m == nil {
			head = append(head, trimmed)
			continue
		}
		indent, item, key, rest := len(m[1]), m[2] != "", m[3], m[5]
		if item {
			for len(stack) > 0 && stack[len(stack)-1].indent >= indent {
				stack = stack[:len(stack)-1]
			}
			stack = append(stack, level{indent, "[]"})
			indent += 2
		}
		for len(stack) > 0 && stack[len(stack)-1].indent >= indent {
			stack = stack[:len(stack)-1]
		}
		stack = append(stack, level{indent, key})
		parts := make([]string, len(stack))
		for i, l := range stack {
			parts[i] = l.key
		}
		path := strings.ReplaceAll(strings.Join(parts, "."), ".[]", "[]")
		meaning := strings.Join(head, " ")
		if i := strings.Index(rest, "# "); i >= 0 {
			trailing := strings.TrimSpace(rest[i+2:])
			switch {
			case meaning == "":
				meaning = trailing
			case strings.HasPrefix(trailing, "e.g."):
				// An example after the explanation above the key.
				meaning += " (" + trailing + ")"
			default:
				meaning = trailing
			}
		}
		head = nil
		if meaning != "" && out[path] == "" {
			out[path] = meaning
		}
	}
	return out
}
