package served

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
	"github.com/pith-dev/pith/core/compaction"
	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/internal/realdir"
	"github.com/pith-dev/pith/store/files"
)

// Files is the default source: pi's JSONL files under sessions.root,
// every one reached through an os.Root on the root and a sub-root on its
// directory, so no name is checked and then opened again by path.
type Files struct {
	// rootPath is sessions.root in force (config.CheckReload refuses a
	// reload moving it; a restart does).
	rootPath func() string
	// tenants reports whether the configuration in force gives tokens
	// prefixes: then a session is reached through real directories only
	// (checkDirs).
	tenants func() bool
	// bound is server.maxSessionBytes in force: every reading of a
	// session file, whole or what others appended, is held to it.
	bound SessionBound
	log   hclog.Logger

	mu sync.Mutex // guards the fields below
	// root is sessions.root, opened once: every file operation under it
	// goes through this handle (os.Root), never through a path.
	root     *os.Root
	rootAt   string
	oldRoots []*os.Root
	closed   bool

	// beforeMkdir, when set (tests), runs before a create's directories
	// are made: where a swap after a check would land.
	beforeMkdir func()
	// afterCheck, when set (tests), runs between openDir's check of the
	// directories and its open of the last one.
	afterCheck func()

	watch fileWatch
}

// NewFiles is the source of the files under rootPath() (sessions.root in
// force); tenants reports whether tokens have prefixes in the
// configuration in force (then sessions are reached through real
// directories only); bound is server.maxSessionBytes in force.
func NewFiles(rootPath func() string, tenants func() bool, bound SessionBound, log hclog.Logger) *Files {
	return &Files{rootPath: rootPath, tenants: tenants, bound: bound, log: log}
}

// openDir opens the directory of the session rel under root, checked by
// checkDirs and compared with what was checked (so a directory swapped for
// a link in between is refused), and returns it with the file's name in
// it. The caller closes it.
func (f *Files) openDir(root *os.Root, rel string) (*os.Root, string, error) {
	checked, err := f.checkDirs(root, rel)
	if err != nil {
		return nil, "", err
	}
	if f.afterCheck != nil {
		f.afterCheck()
	}
	dir, base := path.Split(rel)
	dir = strings.TrimSuffix(dir, "/")
	if dir == "" {
		dir = "."
	}
	sub, err := root.OpenRoot(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, "", fmt.Errorf("no directory %q: %w", dir, fs.ErrNotExist)
		}
		return nil, "", rootError(err)
	}
	if err := sameDir(sub, checked); err != nil {
		sub.Close()
		return nil, "", err
	}
	return sub, base, nil
}

// checkDirs is realDirs when tokens have prefixes. Without tenants a
// directory link inside sessions.root is an alias (one session, one key,
// whatever the name); with them it could lead one tenant's name into
// another's directory.
func (f *Files) checkDirs(root *os.Root, rel string) (fs.FileInfo, error) {
	if f.tenants == nil || !f.tenants() {
		return nil, nil
	}
	return realDirs(root, rel)
}

// makeDirs makes the directory dir of a session being created. With
// tenants it walks down through real directories only (realdir): a check
// first and os.Root's MkdirAll after would follow a directory swapped for
// a link in between — one inside sessions.root, so os.Root allows it —
// and make directories in another tenant's tree. Without tenants a link
// inside sessions.root is an alias, as checkDirs says.
func (f *Files) makeDirs(root *os.Root, dir string) error {
	if f.beforeMkdir != nil {
		f.beforeMkdir()
	}
	if f.tenants == nil || !f.tenants() {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("create its directory: %w", rootError(err))
		}
		return nil
	}
	if _, err := realdir.MkdirAll(root, dir, 0o755); err != nil {
		return fmt.Errorf("create its directory: %w", realDirError(err))
	}
	return nil
}

// fileDisplay is how the daemon's errors name a session's file. One open
// file serves every name it is reached by — a hard link or a symlinked
// directory in another tenant's tree — so an error names none of them:
// the caller knows which session it called. The log, the operator's, has
// the name it was opened by.
const fileDisplay = "session file"

// storeOptions are the Store options of the file opened by rel.
func (f *Files) storeOptions(rel string) files.Options {
	// SingleLink: a hard link could name a file outside the root; such a
	// file is read but never written. Admit: what pi or another host
	// appends past the bound is never read in, at the open or after.
	return files.Options{Logger: f.log.Named("session").With("path", rel), SingleLink: true, Display: fileDisplay, Admit: f.admitFile}
}

// admitFile holds an open session file to the bound. The refusal names
// no path (fileDisplay): it reaches whichever caller's call read the file.
func (f *Files) admitFile(size int64) error { return f.bound.Admit(fileDisplay+" is", size) }

// sessionsRoot returns the handle on sessions.root, opening it (and, with
// create, making the directory: it is the operator's, not a client's) on
// first use or after a reload moved it. The path it was opened at comes
// with it.
func (f *Files) sessionsRoot(create bool) (*os.Root, string, error) {
	p := f.rootPath()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil, "", ErrShuttingDown
	}
	if f.root != nil && f.rootAt == p {
		return f.root, p, nil
	}
	if create {
		if err := os.MkdirAll(p, 0o755); err != nil {
			return nil, "", fmt.Errorf("sessions.root cannot be created: %w", errors.Unwrap(err))
		}
	}
	r, err := os.OpenRoot(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, "", fmt.Errorf("no sessions yet (sessions.root does not exist): %w", fs.ErrNotExist)
		}
		return nil, "", fmt.Errorf("sessions.root cannot be opened: %w", errors.Unwrap(err))
	}
	// A root replaced by a reload stays open: sessions opened through it
	// hold their own directory handles, and an open running now may still
	// use it. close releases them all.
	if f.root != nil {
		f.oldRoots = append(f.oldRoots, f.root)
	}
	f.root, f.rootAt = r, p
	return r, p, nil
}

func (f *Files) Open(_ context.Context, rel string, create bool, cwd string, seen func(key any, size int64) (bool, error)) (Backing, bool, error) {
	root, rootAt, err := f.sessionsRoot(create)
	if err != nil {
		return nil, false, err
	}
	if dir := path.Dir(rel); create && dir != "." {
		if err := f.makeDirs(root, dir); err != nil {
			return nil, false, fmt.Errorf("session %q: %w", rel, err)
		}
	}
	sub, base, err := f.openDir(root, rel)
	if err != nil {
		return nil, false, fmt.Errorf("session %q: %w", rel, err)
	}
	keep := false
	defer func() {
		if !keep {
			sub.Close()
		}
	}()
	if owner, ok := strings.CutSuffix(base, compaction.ArchiveSuffix); ok {
		// NAME.pruned.jsonl beside a session NAME is its prune archive
		// (pith prune appends there), never a session of its own: not
		// opened, and not created where the next prune would write.
		if fi, err := sub.Lstat(owner); err == nil && fi.Mode().IsRegular() {
			return nil, false, fmt.Errorf("%w %q: the prune archive of session %q, not a session", ErrInvalidPath, rel, path.Join(path.Dir(rel), owner))
		}
	}
	if fi, err := sub.Lstat(base); err == nil {
		size := int64(-1)
		if fi.Mode().IsRegular() {
			size = fi.Size()
		}
		if known, err := seen(files.KeyOf(fi, rel), size); known || err != nil {
			return nil, false, err
		}
	}
	// Parse outside the registry lock: a large file takes a while, and
	// every other call looks sessions up under that lock.
	st, created, err := files.OpenOrCreateIn(sub, base, create, cwd, f.storeOptions(rel))
	if errors.Is(err, ErrLimit) {
		return nil, false, err // grown past the bound since the size seen above
	}
	if err != nil {
		if strings.Contains(err.Error(), "path escapes from parent") {
			err = ErrOutsideRoot
		}
		return nil, false, fmt.Errorf("session %q: %w", rel, unprefix(err, fileDisplay)) // the caller's own name
	}
	fi, err := sub.Lstat(base)
	if err != nil {
		st.Close()
		return nil, false, fmt.Errorf("session %q: %w", rel, rootError(err))
	}
	b := &fileBacking{src: f, rel: rel, sub: sub, base: base, k: files.KeyOf(fi, rel), abs: filepath.Join(rootAt, filepath.FromSlash(rel))}
	b.st.Store(st)
	b.fi.Store(&fi)
	keep = true
	return b, created, nil
}

func (f *Files) Load(_ context.Context, rel string, maxBytes int64) (*session.File, error) {
	root, _, err := f.sessionsRoot(false)
	if err != nil {
		return nil, err
	}
	sub, base, err := f.openDir(root, rel)
	if err != nil {
		return nil, fmt.Errorf("session %q: %w", rel, err)
	}
	defer sub.Close()
	file, err := files.LoadIn(sub, base, func(size int64) error {
		return OverBound(fmt.Sprintf("session %q is", rel), size, maxBytes)
	})
	if errors.Is(err, ErrLimit) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("session %q: %w", rel, unprefix(err, base))
	}
	return file, nil
}

// Close closes sessions.root's handles, then the file watch (Watch).
func (f *Files) Close() error {
	f.mu.Lock()
	f.closed = true
	for _, r := range append(f.oldRoots, f.root) {
		if r != nil {
			r.Close()
		}
	}
	f.root, f.oldRoots = nil, nil
	f.mu.Unlock()
	return f.closeWatch()
}

// fileBacking is one session file open in the daemon.
type fileBacking struct {
	src *Files
	// rel is the name the session was opened by, relative to
	// sessions.root; base is the file's name in sub, the handle on its
	// directory through which every file operation goes.
	rel, base string
	sub       *os.Root
	k         files.Key
	// abs is the file's path as opened (Follow watches it).
	abs string
	// fi is the file as opened; a different file at the name means it was
	// replaced on disk (prune, migrate, an editor).
	fi atomic.Pointer[fs.FileInfo]
	st atomic.Pointer[files.Session]
	// refused: the file, read again in place, was refused (it holds
	// another session now); calls are refused until it is accepted.
	refused atomic.Bool
	// rewrites is the Store's Rewrites when last reported (reopen).
	rewrites atomic.Uint64
}

func (b *fileBacking) Handle() session.Backend { return b.st.Load() }

func (b *fileBacking) Key() any { return b.k }

func (b *fileBacking) Size() int64 {
	fi, err := b.sub.Lstat(b.base)
	if err != nil {
		return -1 // the write itself reports a missing file
	}
	return fi.Size()
}

func (b *fileBacking) Stale() bool {
	fi, err := b.sub.Lstat(b.base)
	st := b.st.Load()
	return err != nil || b.replacedBy(fi) || b.refused.Load() || st.Behind() || st.Rewrites() != b.rewrites.Load()
}

func (b *fileBacking) replacedBy(fi fs.FileInfo) bool {
	cur := b.fi.Load()
	return cur == nil || !os.SameFile(fi, *cur)
}

func (b *fileBacking) Reopen(accept func(session.Backend) error) (func(), Reopened, error) {
	fi, err := b.sub.Lstat(b.base)
	// Any caller's call gets here, by whichever of the file's names:
	// the errors name none (fileDisplay).
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, Reopened{}, fmt.Errorf("%s: gone: %w", fileDisplay, fs.ErrNotExist)
		}
		return nil, Reopened{}, fmt.Errorf("%s: %w", fileDisplay, rootError(err))
	}
	if !b.replacedBy(fi) {
		// The same file: read what pi or a pith command appended.
		st := b.st.Load()
		// Past the bound, the Store refuses before it reads (admitFile)
		// and keeps what it had: refused until the file shrinks or the
		// bound is raised.
		moved, err := st.Refresh()
		if err != nil {
			return nil, Reopened{}, err
		}
		// Read whole again, by this Refresh or by a write that found the
		// file overwritten in place: a rewrite, not only appends.
		n := st.Rewrites()
		rewritten := b.rewrites.Swap(n) != n
		if !moved && !rewritten && !b.refused.Load() {
			return nil, Reopened{}, nil
		}
		// The Store has read the file as it is now: if accept refuses it
		// (overwritten in place by another session), every call is
		// refused until it is accepted, rather than served from it.
		if err := accept(st); err != nil {
			b.refused.Store(true)
			return nil, Reopened{}, err
		}
		b.refused.Store(false)
		return func() {}, Reopened{Rewritten: rewritten}, nil
	}
	st, err := files.OpenIn(b.sub, b.base, b.src.storeOptions(b.rel))
	if errors.Is(err, ErrLimit) {
		return nil, Reopened{}, err // the handle in use stays
	}
	if err != nil {
		return nil, Reopened{}, fmt.Errorf("%s: reopen: %w", fileDisplay, unprefix(err, fileDisplay))
	}
	if err := accept(st); err != nil {
		st.Close()
		return nil, Reopened{}, err
	}
	if fi2, err := b.sub.Lstat(b.base); err == nil {
		fi = fi2
	}
	b.rewrites.Store(st.Rewrites())
	old := b.st.Swap(st)
	b.fi.Store(&fi)
	b.src.log.Info("session file replaced on disk; reopened", "session", st.File().Header.ID, "path", b.rel)
	return func() { old.Close() }, Reopened{Fresh: true, Rewritten: true}, nil
}

func (b *fileBacking) Reaches(rel string) bool {
	root, _, err := b.src.sessionsRoot(false)
	if err != nil {
		return false
	}
	// As open reaches it: real directories with tenants, then Lstat.
	sub, base, err := b.src.openDir(root, rel)
	if err != nil {
		return false
	}
	defer sub.Close()
	fi, err := sub.Lstat(base)
	return err == nil && !b.replacedBy(fi)
}

func (b *fileBacking) Close() error {
	err := b.st.Load().Close()
	if cerr := b.sub.Close(); err == nil {
		err = cerr
	}
	return err
}
