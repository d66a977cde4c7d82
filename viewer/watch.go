package viewer

import (
	"path/filepath"
	"sync"

	"github.com/fsnotify/fsnotify"
	"github.com/hashicorp/go-hclog"
)

// dirWatch is one inotify (fsnotify) instance for many session files: the
// directories they lie in are watched (an atomic rewrite replaces a file
// by a rename, which a watch on the old inode misses), each once however
// many of its files are followed, and every event goes to the callbacks
// of its file. A Sessions shares one among all its sessions: the kernel
// allows a user few instances (fs.inotify.max_user_instances, 128 by
// default), and one per session let a viewer client spend them for every
// program of the daemon's user.
type dirWatch struct {
	w   *fsnotify.Watcher
	log hclog.Logger

	mu    sync.Mutex
	dirs  map[string]int // watched directory → files followed in it
	files map[string]map[int]func(fsnotify.Op)
	next  int

	done chan struct{}
}

func newDirWatch(log hclog.Logger) (*dirWatch, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	d := &dirWatch{w: w, log: log, dirs: map[string]int{}, files: map[string]map[int]func(fsnotify.Op){}, done: make(chan struct{})}
	go d.run()
	return d, nil
}

// follow calls fn with the operation of every event on path (absolute and
// clean) until stop is called.
func (d *dirWatch) follow(path string, fn func(fsnotify.Op)) (stop func(), err error) {
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

func (d *dirWatch) run() {
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
		}
	}
}

// close stops the watch; callbacks are not called after it returns.
func (d *dirWatch) close() error {
	err := d.w.Close()
	<-d.done
	return err
}
