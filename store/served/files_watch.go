package served

import (
	"sync"

	"github.com/fsnotify/fsnotify"
	"github.com/pith-dev/pith/internal/dirwatch"
)

// fileWatch is the files' one watch, made on first use.
type fileWatch struct {
	mu  sync.Mutex
	w   *dirwatch.Watch
	err error
}

// FollowFunc follows the file at path, calling onChange at every change
// to it, until stop.
type FollowFunc = func(path string, onChange func(fsnotify.Op)) (stop func(), err error)

// Watch is how to follow a file through the one file watch of the
// sessions under sessions.root, made on first use: the daemon's viewer
// pages and the sessions it follows for their WatchEvents clients share
// it (the kernel allows a user few inotify instances). After Close it is
// ErrShuttingDown.
func (f *Files) Watch() (FollowFunc, error) {
	w, err := f.fileWatch()
	if err != nil {
		return nil, err
	}
	return w.Follow, nil
}

func (f *Files) fileWatch() (*dirwatch.Watch, error) {
	f.watch.mu.Lock()
	defer f.watch.mu.Unlock()
	if f.watch.w == nil && f.watch.err == nil {
		f.watch.w, f.watch.err = dirwatch.New(f.log.Named("watch"))
	}
	return f.watch.w, f.watch.err
}

// closeWatch closes the watch, if it was made; later uses are refused.
func (f *Files) closeWatch() error {
	f.watch.mu.Lock()
	defer f.watch.mu.Unlock()
	var err error
	if f.watch.w != nil {
		err = f.watch.w.Close()
	}
	f.watch.w, f.watch.err = nil, ErrShuttingDown
	return err
}

// Follow calls poke at every change to the session's file through the
// files' watch (another program appending to it, or renaming another
// file over it), until stop.
func (b *fileBacking) Follow(poke func()) (stop func(), err error) {
	follow, err := b.src.Watch()
	if err != nil {
		return nil, err
	}
	return follow(b.abs, func(fsnotify.Op) { poke() })
}
