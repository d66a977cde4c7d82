// Package dirwatch is one inotify (fsnotify) instance for many files: the
// directories they lie in are watched (an atomic rewrite replaces a file
// by a rename, which a watch on the old inode misses), each once however
// many of its files are followed, and every event goes to the callbacks of
// its file. A process shares one among everything it follows: the kernel
// allows a user few instances (fs.inotify.max_user_instances, 128 by
// default), and one per file let a viewer client spend them for every
// program of the daemon's user. pith serve has one, shared by its viewer's
// pages and the sessions its WatchEvents clients follow. A files store's
// Watch follows whole directories through one too (FollowDir), and so does
// the configuration's hot reload (config.Watcher), so every inotify event
// the program reads comes through this package.
package dirwatch

import (
	"errors"
	"path/filepath"
	"sync"

	"github.com/fsnotify/fsnotify"
	"github.com/hashicorp/go-hclog"
)

// Watch is one fsnotify instance routing events to the files followed.
type Watch struct {
	w   *fsnotify.Watcher
	log hclog.Logger

	mu    sync.Mutex
	dirs  map[string]int // watched directory → files followed in it
	files map[string]map[int]func(fsnotify.Op)
	dirFn map[string]map[int]DirFunc // directory followed whole → its callbacks
	next  int

	done chan struct{}
}

// New starts a Watch; Close it.
func New(log hclog.Logger) (*Watch, error) {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	d := &Watch{w: w, log: log, dirs: map[string]int{}, files: map[string]map[int]func(fsnotify.Op){}, dirFn: map[string]map[int]DirFunc{}, done: make(chan struct{})}
	go d.run()
	return d, nil
}

// Follow calls fn with the operation of every event on path (absolute and
// clean) until stop is called. fn runs on the watch's one goroutine: it
// must not block.
func (d *Watch) Follow(path string, fn func(fsnotify.Op)) (stop func(), err error) {
	return follow(d, filepath.Dir(path), d.files, path, fn)
}

// DirFunc is told of every event in a directory followed whole: the
// event's name (absolute) and operation, or name "" and no operation when
// events were lost (the kernel's queue overflowed) and anything in the
// directory may have changed.
type DirFunc func(name string, op fsnotify.Op)

// FollowDir calls fn with every event on the entries of dir (absolute and
// clean), not its subdirectories', until stop is called; a caller that
// wants a tree follows each directory of it. fn runs on the watch's one
// goroutine: whatever it waits for, the watch's other followers wait too.
func (d *Watch) FollowDir(dir string, fn DirFunc) (stop func(), err error) {
	return follow(d, dir, d.dirFn, dir, fn)
}

// follow registers fn under key in byKey, watching dir while anything in
// it is followed.
func follow[F any](d *Watch, dir string, byKey map[string]map[int]F, key string, fn F) (stop func(), err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.dirs[dir] == 0 {
		if err := d.w.Add(dir); err != nil {
			return nil, err
		}
	}
	d.dirs[dir]++
	id := d.next
	d.next++
	if byKey[key] == nil {
		byKey[key] = map[int]F{}
	}
	byKey[key][id] = fn
	var once sync.Once
	return func() {
		once.Do(func() {
			d.mu.Lock()
			defer d.mu.Unlock()
			delete(byKey[key], id)
			if len(byKey[key]) == 0 {
				delete(byKey, key)
			}
			if d.dirs[dir]--; d.dirs[dir] == 0 {
				delete(d.dirs, dir)
				_ = d.w.Remove(dir) // gone already when the directory was removed
			}
		})
	}, nil
}

func (d *Watch) run() {
	defer close(d.done)
	for {
		select {
		case ev, ok := <-d.w.Events:
			if !ok {
				return
			}
			name := filepath.Clean(ev.Name)
			d.mu.Lock()
			fns := make([]func(fsnotify.Op), 0, len(d.files[name]))
			for _, fn := range d.files[name] {
				fns = append(fns, fn)
			}
			dirFns := make([]DirFunc, 0, len(d.dirFn[filepath.Dir(name)]))
			for _, fn := range d.dirFn[filepath.Dir(name)] {
				dirFns = append(dirFns, fn)
			}
			d.mu.Unlock()
			for _, fn := range fns {
				fn(ev.Op)
			}
			for _, fn := range dirFns {
				fn(name, ev.Op)
			}
		case err, ok := <-d.w.Errors:
			if !ok {
				return
			}
			d.log.Warn("file watch error; followers read their files again", "error", err)
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				d.overflowed()
			}
		}
	}
}

// overflowed tells every file's callbacks that events were lost: the
// kernel's queue overflowed, and any file may have been appended to or
// replaced meanwhile. Each is called once with Create, as for a file
// written anew, so that its follower reads it again whole; before, the
// loss was only logged, and a page or a WatchEvents client missed other
// writers' appends until that file happened to change again. Each
// directory's follower is called once with no name (see DirFunc).
func (d *Watch) overflowed() {
	d.mu.Lock()
	var fns []func(fsnotify.Op)
	for _, byID := range d.files {
		for _, fn := range byID {
			fns = append(fns, fn)
		}
	}
	var dirFns []DirFunc
	for _, byID := range d.dirFn {
		for _, fn := range byID {
			dirFns = append(dirFns, fn)
		}
	}
	d.mu.Unlock()
	for _, fn := range fns {
		fn(fsnotify.Create)
	}
	for _, fn := range dirFns {
		fn("", 0)
	}
}

// Close stops the watch; callbacks are not called after it returns.
func (d *Watch) Close() error {
	err := d.w.Close()
	<-d.done
	return err
}
