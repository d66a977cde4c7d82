// Package faultfs wraps a files.FS so that tests can fail any single file
// operation: the Nth write, fsync, truncate, rename, create, remove,
// directory sync or chmod, with an error such as ENOSPC or EIO. A failed write
// first writes half of its bytes, as a disk that fills up mid-write does.
//
// Tests run a command once with no fault to count its operations, then
// once per operation with that one failing, and check what is left.
package faultfs

import (
	"fmt"
	"io/fs"
	"os"
	"sync"

	"github.com/pith-dev/pith/store/files"
)

// Op is a kind of file operation.
type Op int

// The operations that can fail.
const (
	Write Op = iota
	Sync
	Truncate
	Rename
	Create
	Remove
	SyncDir
	// Chmod is a handle's chmod: a rewrite gives the new file the
	// session's permissions before it takes the name.
	Chmod
	numOps
)

var opNames = [...]string{"write", "fsync", "truncate", "rename", "create", "remove", "dirsync", "chmod"}

func (o Op) String() string { return opNames[o] }

// Ops lists every operation kind.
func Ops() []Op {
	out := make([]Op, numOps)
	for i := range out {
		out[i] = Op(i)
	}
	return out
}

// Fault fails the Nth (1-based) operation of kind Op with Err; N 0 fails
// nothing. Sticky makes every later operation of the kind fail too, as a
// full disk does.
type Fault struct {
	Op     Op
	N      int
	Err    error
	Sticky bool
}

func (f Fault) String() string { return fmt.Sprintf("%v #%d: %v", f.Op, f.N, f.Err) }

// Counter counts operations and injects Faults. One Counter can wrap
// several FS values (Wrap), so a test counts across reopenings.
type Counter struct {
	mu     sync.Mutex
	faults []Fault
	counts [numOps]int
	fired  bool
	// Before, when set, runs before every counted operation with its kind
	// and number (1-based), outside the Counter's lock: tests use it to
	// act inside a window, such as another process appending just before
	// a rename.
	Before func(op Op, n int)
}

// New returns a Counter that injects the faults (at most one per Op).
func New(faults ...Fault) *Counter { return &Counter{faults: faults} }

// Wrap is for files.Options.WrapFS.
func (c *Counter) Wrap(inner files.FS) files.FS { return &faultFS{inner: inner, c: c} }

// Count is how many operations of the kind were attempted.
func (c *Counter) Count(op Op) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts[op]
}

// Fired reports whether the fault was injected.
func (c *Counter) Fired() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.fired
}

// hit counts an operation and returns the error to inject, or nil.
func (c *Counter) hit(op Op) error {
	c.mu.Lock()
	c.counts[op]++
	if c.Before != nil {
		n, before := c.counts[op], c.Before
		c.mu.Unlock()
		before(op, n)
		c.mu.Lock()
	}
	defer c.mu.Unlock()
	for _, f := range c.faults {
		if f.N == 0 || op != f.Op {
			continue
		}
		if c.counts[op] == f.N || (f.Sticky && c.counts[op] > f.N) {
			c.fired = true
			return f.Err
		}
	}
	return nil
}

type faultFS struct {
	inner files.FS
	c     *Counter
}

func (f *faultFS) OpenFile(name string, flag int, perm fs.FileMode) (files.Handle, error) {
	if flag&os.O_CREATE != 0 {
		if err := f.c.hit(Create); err != nil {
			return nil, &fs.PathError{Op: "open", Path: name, Err: err}
		}
	}
	h, err := f.inner.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &handle{Handle: h, c: f.c}, nil
}

func (f *faultFS) Rename(oldname, newname string) error {
	if err := f.c.hit(Rename); err != nil {
		return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: err}
	}
	return f.inner.Rename(oldname, newname)
}

func (f *faultFS) Remove(name string) error {
	if err := f.c.hit(Remove); err != nil {
		return &fs.PathError{Op: "remove", Path: name, Err: err}
	}
	return f.inner.Remove(name)
}

func (f *faultFS) Stat(name string) (fs.FileInfo, error)  { return f.inner.Stat(name) }
func (f *faultFS) Lstat(name string) (fs.FileInfo, error) { return f.inner.Lstat(name) }
func (f *faultFS) ReadDir() ([]string, error)             { return f.inner.ReadDir() }

func (f *faultFS) SyncDir() error {
	if err := f.c.hit(SyncDir); err != nil {
		return err
	}
	return f.inner.SyncDir()
}

type handle struct {
	files.Handle
	c *Counter
}

func (h *handle) Write(p []byte) (int, error) {
	if err := h.c.hit(Write); err != nil {
		n, _ := h.Handle.Write(p[:len(p)/2])
		return n, err
	}
	return h.Handle.Write(p)
}

// WriteAt (pwrite, the append intent record) counts as a write: a full
// disk fails it as well.
func (h *handle) WriteAt(p []byte, off int64) (int, error) {
	if err := h.c.hit(Write); err != nil {
		n, _ := h.Handle.WriteAt(p[:len(p)/2], off)
		return n, err
	}
	return h.Handle.WriteAt(p, off)
}

func (h *handle) Sync() error {
	if err := h.c.hit(Sync); err != nil {
		return err
	}
	return h.Handle.Sync()
}

func (h *handle) Chmod(mode fs.FileMode) error {
	if err := h.c.hit(Chmod); err != nil {
		return &fs.PathError{Op: "chmod", Path: "", Err: err}
	}
	return h.Handle.Chmod(mode)
}

func (h *handle) Truncate(size int64) error {
	if err := h.c.hit(Truncate); err != nil {
		return err
	}
	return h.Handle.Truncate(size)
}

// Fd is the inner handle's descriptor (or an invalid one), so that what a
// Store asks the system about an open file, such as a lease, works under
// fault injection too.
func (h *handle) Fd() uintptr {
	if f, ok := h.Handle.(interface{ Fd() uintptr }); ok {
		return f.Fd()
	}
	return ^uintptr(0)
}
