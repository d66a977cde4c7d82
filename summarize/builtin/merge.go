package builtin

import (
	"regexp"
	"strings"
	"sync"
)

// bucket is the kind of fact an item is; layouts map buckets to sections.
type bucket int

const (
	bGoal bucket = iota
	bConstraints
	bDone
	bInProgress
	bBlocked
	bDecisions
	bNext
	bCritical
)

// prevItem is one fact read back from an earlier summary.
type prevItem struct {
	bucket bucket
	text   string // list marker removed; may hold continuation lines
}

// prevSummary is an earlier summary taken apart for merging.
type prevSummary struct {
	items    []prevItem
	read     []string // paths of its <read-files> block
	modified []string // paths of its <modified-files> block
}

var (
	headingLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$`) })
	boldLine    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s{0,3}\*\*([^*]+?)\*\*:?\s*$`) })
	itemStart   = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^\s{0,3}(?:[-*+]|\d{1,3}[.)])\s+(?:\[[ xX]\]\s+)?(.*)$`)
	})
	placeholders = map[string]bool{"(none)": true, "none": true, "none.": true, "no prior history.": true, "no content to summarize": true, "n/a": true, "-": true}
)

// parsePrevSummary reads a summary in any of the shapes Pith writes — the
// sections of docs/behaviour.md §7 from this or another summarizer, a split-turn summary
// with its turn-prefix sections, the file blocks — or free prose, and
// returns its facts by bucket. Unknown headings and prose outside any
// section land in Critical Context so nothing is lost.
func parsePrevSummary(s string) prevSummary {
	var ps prevSummary
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s, ps.read = cutFileBlock(s, "read-files")
	s, ps.modified = cutFileBlock(s, "modified-files")

	cur := bCritical
	fence := ""
	open := false // whether the last item may take continuation lines
	for _, l := range strings.Split(s, "\n") {
		t := strings.TrimSpace(l)
		if fence != "" || strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			// A code block belongs to the item before it, verbatim.
			switch {
			case fence != "" && strings.HasPrefix(t, fence):
				fence = ""
			case fence == "":
				fence = t[:3]
			}
			if open && len(ps.items) > 0 {
				ps.items[len(ps.items)-1].text += "\n" + l
			} else {
				ps.items = append(ps.items, prevItem{bucket: cur, text: l})
				open = true
			}
			continue
		}
		if t == "" {
			open = false
			continue
		}
		if t == "---" || t == "***" {
			open = false
			continue
		}
		if m := headingLine().FindStringSubmatch(l); m != nil {
			cur, open = headingBucket(m[1], cur), false
			continue
		}
		if m := boldLine().FindStringSubmatch(l); m != nil {
			cur, open = headingBucket(m[1], cur), false
			continue
		}
		if m := itemStart().FindStringSubmatch(l); m != nil {
			text := strings.TrimSpace(m[1])
			if placeholders[strings.ToLower(text)] {
				open = false
				continue
			}
			ps.items = append(ps.items, prevItem{bucket: cur, text: text})
			open = true
			continue
		}
		if open && len(ps.items) > 0 && (strings.HasPrefix(l, "  ") || strings.HasPrefix(l, "\t")) {
			ps.items[len(ps.items)-1].text += "\n" + l
			continue
		}
		if placeholders[strings.ToLower(t)] {
			continue
		}
		ps.items = append(ps.items, prevItem{bucket: cur, text: t})
		open = true
	}
	return ps
}

// headingBucket maps a heading to the bucket its lines belong to. A
// heading it does not know keeps the lines in Critical Context, except a
// bare "Turn Context" marker, which leaves the current bucket alone until
// the turn-prefix headings follow.
func headingBucket(h string, cur bucket) bucket {
	h = strings.ToLower(strings.TrimSuffix(strings.TrimSpace(h), ":"))
	switch {
	case strings.Contains(h, "in progress"):
		return bInProgress
	case strings.Contains(h, "blocked"):
		return bBlocked
	case strings.Contains(h, "done"), strings.Contains(h, "completed"), strings.Contains(h, "progress"):
		return bDone
	case strings.Contains(h, "goal"), strings.Contains(h, "original request"), strings.Contains(h, "objective"):
		return bGoal
	case strings.Contains(h, "constraint"), strings.Contains(h, "preference"):
		return bConstraints
	case strings.Contains(h, "decision"):
		return bDecisions
	case strings.Contains(h, "next"):
		return bNext
	case strings.Contains(h, "turn context"):
		return cur
	}
	return bCritical
}

// cutFileBlock removes every <tag>…</tag> block and returns the paths in
// them (one a line).
func cutFileBlock(s, tag string) (string, []string) {
	var paths []string
	open, close := "<"+tag+">", "</"+tag+">"
	for {
		i := strings.Index(s, open)
		if i < 0 {
			return s, paths
		}
		j := strings.Index(s[i:], close)
		if j < 0 {
			return s, paths
		}
		for _, p := range strings.Split(s[i+len(open):i+j], "\n") {
			if p = strings.TrimSpace(p); p != "" {
				paths = append(paths, p)
			}
		}
		s = s[:i] + s[i+j+len(close):]
	}
}
