package files

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"

	"github.com/fsnotify/fsnotify"

	"github.com/pith-dev/pith/store"
)

// Publish hands the event to every Watch of this Store value: files have
// no channel between processes, and one host serves a sessions directory.
func (f *Store) Publish(ctx context.Context, name string, payload []byte) error {
	if err := store.CheckName(name); err != nil {
		return err
	}
	if len(payload) > store.MaxPayload {
		return fmt.Errorf("%s: %w (%d bytes, at most %d)", name, store.ErrPayloadTooLarge, len(payload), store.MaxPayload)
	}
	if !json.Valid(payload) {
		return fmt.Errorf("%s: the event payload is not JSON", name)
	}
	ev := store.Event{Session: name, Kind: store.EventPublished, Payload: bytes.Clone(payload)}
	f.mu.Lock()
	inboxes := make([]chan store.Event, 0, len(f.watches))
	for c := range f.watches {
		inboxes = append(inboxes, c)
	}
	f.mu.Unlock()
	for _, c := range inboxes {
		select {
		case c <- ev:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// subscribe registers a Watch's inbox for published events.
func (f *Store) subscribe() (chan store.Event, func()) {
	c := make(chan store.Event, 64)
	f.mu.Lock()
	if f.watches == nil {
		f.watches = map[chan store.Event]struct{}{}
	}
	f.watches[c] = struct{}{}
	f.mu.Unlock()
	return c, func() {
		f.mu.Lock()
		delete(f.watches, c)
		f.mu.Unlock()
	}
}

// Watch reports changes to session files seen by fsnotify in the
// directory and its subdirectories, also those made later. A rename
// over a session (a rewrite) shows as a Create of its name, so a Create of
// a name seen before is reported as a rewrite.
func (f *Store) Watch(ctx context.Context) (<-chan store.Event, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	base := f.root.Name()
	known := map[string]bool{}
	err = fs.WalkDir(f.root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != "." && strings.HasPrefix(d.Name(), ".") {
				return fs.SkipDir
			}
			return w.Add(path.Join(base, p))
		}
		known[p] = true
		return nil
	})
	if err != nil {
		w.Close()
		return nil, err
	}
	out := make(chan store.Event, 64)
	inbox, unsubscribe := f.subscribe()
	go func() {
		defer close(out)
		defer w.Close()
		defer unsubscribe()
		for {
			select {
			case <-ctx.Done():
				return
			case ev := <-inbox:
				select {
				case out <- ev:
				case <-ctx.Done():
					return
				}
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				rel, err := relTo(base, ev.Name)
				if err != nil {
					continue
				}
				if ev.Has(fsnotify.Create) && !strings.HasPrefix(path.Base(rel), ".") {
					if st, err := f.root.Lstat(rel); err == nil && st.IsDir() {
						// A new tenant directory: watch it, and report
						// sessions made in it before the watch began.
						w.Add(ev.Name)
						for _, e := range newSessions(f.root, rel, known) {
							select {
							case out <- e:
							case <-ctx.Done():
								return
							}
						}
						continue
					}
				}
				if store.CheckName(rel) != nil {
					continue
				}
				kind := ""
				switch {
				case ev.Has(fsnotify.Create) && known[rel]:
					kind = store.EventRewritten
				case ev.Has(fsnotify.Create):
					kind, known[rel] = store.EventCreated, true
				case ev.Has(fsnotify.Write):
					kind = store.EventAppended
				default:
					continue
				}
				select {
				case out <- store.Event{Session: rel, Kind: kind}:
				case <-ctx.Done():
					return
				}
			case <-w.Errors:
			}
		}
	}()
	return out, nil
}

// newSessions lists the session files under dir not in known (adding
// them), as created events; nested directories are watched as their
// Create events arrive.
func newSessions(root *os.Root, dir string, known map[string]bool) []store.Event {
	var evs []store.Event
	fs.WalkDir(root.FS(), dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && store.CheckName(p) == nil && !known[p] {
			known[p] = true
			evs = append(evs, store.Event{Session: p, Kind: store.EventCreated})
		}
		return nil
	})
	return evs
}

func relTo(base, p string) (string, error) {
	rel, ok := strings.CutPrefix(p, base+string(os.PathSeparator))
	if !ok {
		return "", errors.New("outside")
	}
	return strings.ReplaceAll(rel, string(os.PathSeparator), "/"), nil
}
