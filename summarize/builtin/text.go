package builtin

import (
	"regexp"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/pith-dev/pith/core/tokens"
)

// Text helpers of the built-in summarizer: flattening, clipping on a
// UTF-16 budget, sentence splitting and the marker patterns that decide
// which sentence lands in which section.

// flatten collapses every run of whitespace, newlines included, into one
// space, so an extracted fact renders on one line.
func flatten(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// clip shortens s to at most max UTF-16 units, ending with "…" when cut.
// It prefers to cut at a space when one is close to the limit, and never
// splits a rune.
func clip(s string, max int) string {
	if max <= 0 || tokens.Units(s) <= max {
		return s
	}
	budget := max - 1 // room for the ellipsis
	units, cut := 0, 0
	for i, r := range s {
		n := 1
		if r >= 0x10000 {
			n = 2
		}
		if units+n > budget {
			break
		}
		units += n
		cut = i + utf8.RuneLen(r)
	}
	head := s[:cut]
	if sp := strings.LastIndexByte(head, ' '); sp > len(head)*3/4 {
		head = head[:sp]
	}
	// Never leave a code span open: cut before its opening backtick.
	if strings.Count(head, "`")%2 == 1 {
		head = head[:strings.LastIndexByte(head, '`')]
	}
	return strings.TrimRight(head, " ,;:") + "…"
}

// firstLine returns the first non-blank line of s, trimmed on the right.
func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) != "" {
			return strings.TrimRight(l, " \t\r")
		}
	}
	return ""
}

// stripCode removes fenced code blocks, which hold code rather than prose
// worth quoting as a fact.
func stripCode(s string) string {
	if !strings.Contains(s, "```") && !strings.Contains(s, "~~~") {
		return s
	}
	var b strings.Builder
	fence := ""
	for _, l := range strings.Split(s, "\n") {
		t := strings.TrimSpace(l)
		if fence != "" {
			if strings.HasPrefix(t, fence) {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			fence = t[:3]
			continue
		}
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.String()
}

var listMarker = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s*(?:[-*+]|\d{1,3}[.)])\s+(?:\[[ xX]\]\s+)?`) })

// proseLines returns the prose lines of a text: code blocks, tables and
// headings dropped, list markers and quote marks stripped.
func proseLines(s string) []string {
	var out []string
	for _, l := range strings.Split(stripCode(s), "\n") {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "|") || strings.HasPrefix(t, "#") || strings.HasPrefix(t, "---") {
			continue
		}
		t = strings.TrimLeft(t, "> ")
		t = listMarker().ReplaceAllString(t, "")
		if t = strings.TrimSpace(t); t != "" {
			out = append(out, t)
		}
	}
	return out
}

// abbreviations end with a period without ending a sentence.
var abbreviations = []string{"e.g.", "i.e.", "etc.", "vs.", "cf.", "approx.", "incl."}

// sentences splits prose into sentences: each prose line on its own, then
// at '.', '!' or '?' followed by a space. A period inside a token (main.go,
// v1.2) never splits because no space follows it.
func sentences(s string) []string {
	var out []string
	for _, line := range proseLines(s) {
		start := 0
		for i := 0; i < len(line); i++ {
			c := line[i]
			if c != '.' && c != '!' && c != '?' {
				continue
			}
			if i+1 < len(line) && line[i+1] != ' ' {
				continue
			}
			cand := line[start : i+1]
			if c == '.' && endsWithAbbreviation(cand) {
				continue
			}
			if t := strings.TrimSpace(cand); t != "" {
				out = append(out, t)
			}
			start = i + 1
		}
		if t := strings.TrimSpace(line[start:]); t != "" {
			out = append(out, t)
		}
	}
	return out
}

func endsWithAbbreviation(s string) bool {
	low := strings.ToLower(s)
	for _, a := range abbreviations {
		if strings.HasSuffix(low, a) {
			return true
		}
	}
	return false
}

// wordCount counts whitespace-separated words.
func wordCount(s string) int { return len(strings.Fields(s)) }

// isQuestion reports whether a text ends with a question mark, ignoring
// trailing whitespace, closing quotes, brackets and emphasis.
func isQuestion(s string) bool {
	t := strings.TrimRightFunc(s, func(r rune) bool {
		return unicode.IsSpace(r) || strings.ContainsRune("*_`\"')]", r)
	})
	return strings.HasSuffix(t, "?")
}

// normKey is the dedupe key of a fact: case and spacing folded.
func normKey(s string) string {
	return strings.ToLower(flatten(s))
}

// Marker patterns. They are deliberately plain: the built-in summarizer is
// extractive, and a reader can always tell why a sentence was picked.
var (
	constraintMarker = phrases{"must", "mustn't", "never", "don't", "do not", "dont", "always", "prefer", "preferably",
		"should", "shouldn't", "should not", "please use", "please don't", "please do not", "avoid", "make sure",
		"ensure", "only want", "do not want", "don't want", "no need to", "instead of"}
	decisionMarker = phrases{"decided", "decide to", "decision", "will use", "we'll use", "i'll use", "let's use",
		"we will use", "instead of", "chose", "choose to", "chosen", "going with", "go with", "switch to",
		"switched to", "switching to", "opted", "opt for", "rather than", "settled on", "the fix is",
		"the approach is", "plan is to"}
	resultMarker = phrases{"done", "fixed", "complete", "completed", "created", "updated", "added", "implemented",
		"passes", "passing", "pass", "works", "working now", "removed", "renamed", "refactored", "committed",
		"merged", "resolved", "moved", "replaced", "wrote", "written", "extracted", "now returns", "all tests"}
	nextMarker = phrases{"next", "then i'll", "then we", "i'll", "i will", "we'll", "we will", "we should",
		"we need to", "still need", "remaining", "todo", "to do", "going to", "plan to", "let me", "after that",
		"afterwards"}
	// fixMarker: an assistant sentence saying an error is dealt with; a
	// negation ("not fixed yet", "still fails") or a question cancels it.
	fixMarker = phrases{"fixed", "resolved", "now passes", "passes now", "now pass", "now works", "works now",
		"now accepts", "all tests pass", "tests pass", "no longer fails", "no longer crashes", "no longer panics"}
	fixNegation     = phrases{"not", "isn't", "wasn't", "hasn't", "haven't", "still", "yet", "unable", "couldn't", "cannot", "can't", "won't", "fails", "failing"}
	speculative     = phrases{"could", "would", "might", "maybe", "perhaps", "consider", "should"}
	errorLineMarker = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)\b(error|errors|fail|failed|failure|fatal|exception|panic|cannot|can't|could not|not found|no such|denied|invalid|undefined|unexpected)\b`)
	})
	exitCodePattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?:exited with code|exit code|exit status) (-?\d+)`) })
	cdPrefix        = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(?:cd\s+\S+\s*(?:&&|;)\s*)+`) })
	interjection    = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)^(hmm+|oh|ah|wait|ok|okay|actually|you're right|sorry)\b`)
	})
	numberedItem    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s{0,3}\d{1,3}[.)]\s+(.*)$`) })
	backtickSpan    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile("`([^`\n]{2,80})`") })
	identLike       = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[\w$@.:/\\~<>\[\]()*#-]+$`) })
	acknowledgement = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)^(ok|okay|k|yes|yep|yeah|no|nope|sure|thanks|thank you|thx|ty|cool|nice|great|good|perfect|lgtm|go|go on|go ahead|continue|proceed|do it|done|right|correct|fine|alright|hm+|\W*)[.!\s]*$`)
	})
)

// looksLikeIdentifier keeps backtick spans that name code: a path, a
// function, a type, a flag. Prose in backticks and shell commands (which
// hold spaces) are left out.
func looksLikeIdentifier(s string) bool {
	if strings.ContainsAny(s, " \t") || !identLike().MatchString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsLetter(r) {
			return true
		}
	}
	return false
}

// isLeadIn reports a sentence that announces rather than states: "Now let
// me update the tests:".
func isLeadIn(s string) bool {
	t := strings.TrimRight(s, " *`")
	if strings.HasSuffix(t, ":") {
		return true
	}
	low := strings.ToLower(s)
	return strings.Contains(low, "let me ") || strings.HasPrefix(low, "let's ") || strings.HasPrefix(low, "now i'll ")
}

// inspectionPrograms only look at things; their runs are counted rather
// than listed.
var inspectionPrograms = map[string]bool{
	"grep": true, "rg": true, "ag": true, "cat": true, "head": true, "tail": true, "ls": true,
	"find": true, "fd": true, "wc": true, "echo": true, "pwd": true, "which": true, "file": true,
	"stat": true, "tree": true, "less": true, "awk": true, "du": true, "diff": true,
}

// inspectionProgram returns the program of a read-only command, "" for a
// command that may change something.
func inspectionProgram(cmd string) string {
	f := strings.Fields(cmd)
	if len(f) == 0 {
		return ""
	}
	prog := f[0]
	switch {
	case inspectionPrograms[prog]:
		if strings.Contains(cmd, ">") && !strings.Contains(cmd, "2>&1") {
			return "" // writes a file
		}
		return prog
	case prog == "sed" && !strings.Contains(cmd, " -i"):
		return prog
	case prog == "git" && len(f) > 1:
		switch f[1] {
		case "status", "diff", "log", "show", "branch", "grep", "blame":
			return "git " + f[1]
		}
	}
	return ""
}

var bareCd = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^cd\s+\S+\s*$`) })

// commandLine is the line of a shell command worth showing: the first one
// that does more than change directory, without a leading "cd dir &&".
func commandLine(cmd string) string {
	for _, l := range strings.Split(cmd, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") || bareCd().MatchString(l) {
			continue
		}
		return cdPrefix().ReplaceAllString(l, "")
	}
	return strings.TrimSpace(firstLine(cmd))
}

// phrases is a marker list: MatchString reports whether any phrase occurs
// in s as whole words, ignoring case. Plain searching is an order of
// magnitude faster than a case-folding regexp alternation, which matters
// on transcripts of ten thousand messages.
type phrases []string

func (p phrases) MatchString(s string) bool {
	low := strings.ToLower(s)
	for _, ph := range p {
		for i := 0; i < len(low); {
			j := strings.Index(low[i:], ph)
			if j < 0 {
				break
			}
			j += i
			if wordBoundary(low, j) && wordBoundary(low, j+len(ph)) {
				return true
			}
			i = j + 1
		}
	}
	return false
}

// wordBoundary reports whether position i of s is not inside a word.
func wordBoundary(s string, i int) bool {
	if i <= 0 || i >= len(s) {
		return true
	}
	before, _ := utf8.DecodeLastRuneInString(s[:i])
	after, _ := utf8.DecodeRuneInString(s[i:])
	return !isWordRune(before) || !isWordRune(after)
}

func isWordRune(r rune) bool {
	return r == '_' || r == '\'' || unicode.IsLetter(r) || unicode.IsDigit(r)
}
