package store

import (
	"path/filepath"
	"sort"

	"github.com/pith-dev/pith/core/session"
)

// SkipArchives sorts names and drops each session's prune archive
// (NAME.pruned.jsonl beside NAME, session.ArchiveSuffix): it has a
// session's name but is its companion, not a session. A lone file with
// such a name is a session. Every listing of session files uses it
// (the files store's List, the daemon's viewer).
func SkipArchives(names []string) []string {
	sort.Strings(names)
	archives := make(map[string]bool, len(names))
	for _, n := range names {
		// A long name's archive is cut and hashed: it is found from
		// the session's name, not the other way round.
		dir, base := filepath.Split(n)
		archives[dir+session.SideName("", base, session.ArchiveSuffix)] = true
	}
	keep := make([]string, 0, len(names))
	for _, n := range names {
		if !archives[n] {
			keep = append(keep, n)
		}
	}
	return keep
}
