// Package dirwatch is one inotify (fsnotify) instance for many files: the
// directories they lie in are watched (an atomic rewrite replaces a file
// by a rename, which a watch on the old inode misses), each once however
// many of its files are followed, and every event goes to the callbacks of
// its file. A process shares one among everything it follows: the kernel
// allows a user few instances (fs.inotify.max_user_instances, 128 by
// default), and one per file let a viewer client spend them for every
// program of the daemon's user. pith serve has one, shared by its viewer's
// pages and the sessions its WatchEvents clients follow.
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
	d := &Watch{w: w, log: log, dirs: map[string]int{}, files: map[string]map[int]func(fsnotify.Op){}, done: make(chan struct{})}
	go d.run()
	return d, nil
}

// Follow calls fn with the operation of every event on path (absolute and
// clean) until stop is called. fn runs on the watch's one goroutine: it
// must not block.
func (d *Watch) Follow(path string, fn func(fsnotify.Op)) (stop func(), err error) {
	dir := filepath.Dir(path)
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
	if d.files[path] == nil {
		d.files[path] = map[int]func(fsnotify.Op){}
	}
	d.files[path][id] = fn
	var once sync.Once
	return func() {
		once.Do(func() {
			d.mu.Lock()
			defer d.mu.Unlock()
			delete(d.files[path], id)
			if len(d.files[path]) == 0 {
				delete(d.files, path)
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
			d.mu.Lock()
			fns := make([]func(fsnotify.Op), 0, len(d.files[filepath.Clean(ev.Name)]))
			for _, fn := range d.files[filepath.Clean(ev.Name)] {
				fns = append(fns, fn)
			}
			d.mu.Unlock()
			for _, fn := range fns {
				fn(ev.Op)
			}
		case err, ok := <-d.w.Errors:
			if !ok {
				return
			}
			d.log.Warn("watching the session files", "error", err)
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
// writers' appends until that file happened to change again.
func (d *Watch) overflowed() {
	d.mu.Lock()
	var fns []func(fsnotify.Op)
	for _, byID := range d.files {
		for _, fn := range byID {
			fns = append(fns, fn)
		}
	}
	d.mu.Unlock()
	for _, fn := range fns {
		fn(fsnotify.Create)
	}
}

// Close stops the watch; callbacks are not called after it returns.
func (d *Watch) Close() error {
	err := d.w.Close()
	<-d.done
	return err
}
