package files

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"github.com/fsnotify/fsnotify"

	"github.com/pith-dev/pith/internal/dirwatch"
	"github.com/pith-dev/pith/store"
)

// Watch reports changes to session files seen by the file watch in the
// directory and its subdirectories, also those made later. A rename
// over a session (a rewrite) shows as a Create of its name, so a Create of
// a name seen before is reported as a rewrite. Each Watch has its own
// dirwatch.Watch: its callbacks wait for this Watch's reader, which must
// not hold back another follower's events.
func (f *Store) Watch(ctx context.Context) (<-chan store.Event, error) {
	t, err := f.watchTree(ctx)
	if err != nil {
		return nil, err
	}
	return t.out, nil
}

func (f *Store) watchTree(ctx context.Context) (*treeWatch, error) {
	dw, err := dirwatch.New(nil)
	if err != nil {
		return nil, err
	}
	t := &treeWatch{f: f, base: f.root.Name(), ctx: ctx, dw: dw,
		out: make(chan store.Event, 64), known: map[string]bool{}, dirs: map[string]func(){}}
	t.mu.Lock()
	err = t.addTree(".", false, nil)
	t.mu.Unlock()
	if err != nil {
		dw.Close()
		return nil, err
	}
	inbox, unsubscribe := f.subscribe()
	go func() {
		defer close(t.out)
		defer dw.Close() // no callback sends after it returns
		defer unsubscribe()
		for {
			select {
			case <-ctx.Done():
				return
			case ev := <-inbox:
				if !t.send(ev) {
					return
				}
			}
		}
	}()
	return t, nil
}

// treeWatch is one Watch: the directories it follows and the sessions it
// has seen, touched by its callbacks (on the dirwatch's one goroutine) and
// by its start.
type treeWatch struct {
	f    *Store
	base string
	ctx  context.Context
	dw   *dirwatch.Watch
	out  chan store.Event

	mu    sync.Mutex
	known map[string]bool   // sessions seen: a Create of one is a rewrite
	dirs  map[string]func() // directory followed (relative) → stop
}

func (t *treeWatch) send(ev store.Event) bool {
	select {
	case t.out <- ev:
		return true
	case <-t.ctx.Done():
		return false
	}
}

// addTree follows dir and the directories under it not followed yet, but
// hidden ones, and records the sessions in them; with report, those not
// seen before are appended to evs as created.
func (t *treeWatch) addTree(dir string, report bool, evs *[]store.Event) error {
	return fs.WalkDir(t.f.root.FS(), dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if report { // a directory gone meanwhile: its parent's events say so
				return nil
			}
			return err
		}
		if d.IsDir() {
			if p != "." && strings.HasPrefix(d.Name(), ".") {
				return fs.SkipDir
			}
			if t.dirs[p] != nil {
				return nil
			}
			stop, err := t.dw.FollowDir(filepath.Join(t.base, filepath.FromSlash(p)), t.event)
			if err != nil {
				if report {
					return fs.SkipDir
				}
				return err
			}
			t.dirs[p] = stop
			return nil
		}
		if report && d.Type().IsRegular() && store.CheckName(p) == nil && !t.known[p] {
			*evs = append(*evs, store.Event{Session: p, Kind: store.EventCreated})
		}
		if !report || store.CheckName(p) == nil {
			t.known[p] = true
		}
		return nil
	})
}

// unfollow stops following dir and the directories under it: it was
// removed or renamed away, and a directory made under its name later is
// another one to watch.
func (t *treeWatch) unfollow(dir string) {
	for p, stop := range t.dirs {
		if p == dir || strings.HasPrefix(p, dir+"/") {
			stop()
			delete(t.dirs, p)
		}
	}
}

// event turns one file event into the store's events.
func (t *treeWatch) event(name string, op fsnotify.Op) {
	var evs []store.Event
	t.mu.Lock()
	if name == "" {
		// Events were lost: the watcher rereads, and directories or
		// sessions made meanwhile are found again.
		evs = append(evs, store.Event{Kind: store.EventResync})
		_ = t.addTree(".", true, &evs)
	} else {
		evs = t.change(name, op)
	}
	t.mu.Unlock()
	for _, ev := range evs {
		if !t.send(ev) {
			return
		}
	}
}

func (t *treeWatch) change(name string, op fsnotify.Op) []store.Event {
	rel, err := relTo(t.base, name)
	if err != nil {
		return nil
	}
	if op.Has(fsnotify.Remove) || op.Has(fsnotify.Rename) {
		if t.dirs[rel] != nil {
			t.unfollow(rel)
			return nil
		}
	}
	if op.Has(fsnotify.Create) && !strings.HasPrefix(path.Base(rel), ".") {
		if st, err := t.f.root.Lstat(rel); err == nil && st.IsDir() {
			// A new tenant directory: watch it, and report sessions
			// made in it before the watch began. One followed already
			// is the same: a removed one was unfollowed at its Remove.
			var evs []store.Event
			_ = t.addTree(rel, true, &evs)
			return evs
		}
	}
	if store.CheckName(rel) != nil {
		return nil
	}
	kind := ""
	switch {
	case op.Has(fsnotify.Create) && t.known[rel]:
		kind = store.EventRewritten
	case op.Has(fsnotify.Create):
		kind, t.known[rel] = store.EventCreated, true
	case op.Has(fsnotify.Write):
		kind = store.EventAppended
	default:
		return nil
	}
	return []store.Event{{Session: rel, Kind: kind}}
}

func relTo(base, p string) (string, error) {
	rel, ok := strings.CutPrefix(p, base+string(os.PathSeparator))
	if !ok {
		return "", errors.New("outside")
	}
	return strings.ReplaceAll(rel, string(os.PathSeparator), "/"), nil
}
