package wiregen

import (
	"regexp"
	"strings"

	"google.golang.org/protobuf/compiler/protogen"
)

var identifier = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)

// doc turns a proto comment into Go doc lines: the comment is written in
// proto terms (BeforeCompactRequest, path_entries), the Go doc reads in Go
// terms (BeforeCompactEvent, PathEntries).
func (c *contract) doc(comments protogen.Comments) []string {
	text := strings.TrimRight(string(comments), "\n")
	if text == "" {
		return nil
	}
	var out []string
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimPrefix(line, " ")
		out = append(out, identifier.ReplaceAllStringFunc(line, func(w string) string {
			if g, ok := c.goNames[w]; ok {
				return g
			}
			return w
		}))
	}
	return out
}

// sentence is the first sentence of doc lines, on one line.
func sentence(lines []string) string {
	s := strings.Join(lines, " ")
	if i := strings.Index(s, ". "); i >= 0 {
		return s[:i+1]
	}
	return s
}

// wrap breaks text into comment lines of about 72 columns.
func wrap(text string) []string {
	var out []string
	line := ""
	for _, w := range strings.Fields(text) {
		if line != "" && len(line)+1+len(w) > 72 {
			out = append(out, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	if line != "" {
		out = append(out, line)
	}
	return out
}

func comment(g *protogen.GeneratedFile, lines []string) {
	for _, l := range lines {
		if l == "" {
			g.P("//")
		} else {
			g.P("// ", l)
		}
	}
}
