package session

import (
	"fmt"

	"github.com/hashicorp/go-hclog"
)

// LogWarnings is the one way Pith reports problems found in a session
// file — a skipped line, a parentId cycle — whether from the CLI, the
// engine or pith serve: one warning record each on log, with the file, the
// line and the reason as fields. The CLI's logger prints them as
//
//	[WARN]  pith: skipped a line of the session file: file=s.jsonl line=3 reason="malformed JSON: unterminated string"
//
// and pith serve's logger in its own configured format.
func LogWarnings(log hclog.Logger, path string, ws []Warning) {
	for _, w := range ws {
		msg := "skipped a line of the session file"
		if w.Problem != "" {
			msg = w.Problem + " in the session file"
		}
		log.Warn(msg, "file", path, "line", w.Line, "reason", w.Reason)
	}
}

// CycleWarnings describes every parentId loop of t (see Tree.Cycles) as a
// warning on the line of the entry where the loop was found.
func CycleWarnings(t *Tree) []Warning {
	at, length := t.Cycles()
	out := make([]Warning, len(at))
	for i, e := range at {
		out[i] = cycleWarning(e, length[i])
	}
	return out
}

// PathCycleWarnings is CycleWarnings for the one loop that cut path, a
// result of Path (see Tree.PathCycle); it is free for a path from a root.
func PathCycleWarnings(t *Tree, path []*Entry) []Warning {
	if e, n := t.PathCycle(path); e != nil {
		return []Warning{cycleWarning(e, n)}
	}
	return nil
}

func cycleWarning(e *Entry, length int) Warning {
	return Warning{Line: e.Line, Problem: "parentId cycle", Reason: fmt.Sprintf(
		"cycle at entry %q: its parentId links loop back to it through %d entries; paths through it stop there", e.ID, length)}
}
