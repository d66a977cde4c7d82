package served

import (
	"context"
	"io/fs"
	"strings"

	"github.com/pith-dev/pith/store"
)

// List names the sessions under sessions.root that may accepts, at most
// max of them (prune archives left out): the regular files in the name
// grammar, in directories neither hidden nor deeper than a name may be.
// With no sessions.root yet there are none.
func (f *Files) List(_ context.Context, may func(name string) bool, max int) ([]string, error) {
	root, _, err := f.sessionsRoot(false)
	if err != nil {
		return nil, nil // no root yet: no sessions
	}
	var names []string
	err = fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable: not listed
		}
		if d.IsDir() {
			if p != "." && (strings.HasPrefix(d.Name(), ".") || strings.Count(p, "/") >= store.MaxNameDepth) {
				return fs.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() && store.CheckName(p) == nil && may(p) {
			names = append(names, p)
			if len(names) >= max {
				return fs.SkipAll
			}
		}
		return nil
	})
	return store.SkipArchives(names), err
}
