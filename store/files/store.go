package files

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/internal/realdir"
	"github.com/pith-dev/pith/internal/regularfile"
	"github.com/pith-dev/pith/store"
)

// Store is the default store.Store: pi's JSONL files under one
// directory, read and written through Session (locking, all-or-nothing
// appends, rewrites that carry over concurrent appends). Every name is
// resolved inside the directory by an os.Root.
type Store struct {
	root *os.Root
	opts Options

	mu        sync.Mutex
	watches   map[chan store.Event]struct{} // each Watch's inbox of published events
	openFiles map[string]*openFile          // sessions kept open for appends
	marks     map[string]tailMark           // where Tail stopped reading
}

// OpenStore opens the files store rooted at dir, which must exist.
func OpenStore(dir string, opts Options) (*Store, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("sessions directory: %w", err)
	}
	return &Store{root: root, opts: opts}, nil
}

// Close releases the sessions kept open and the directory.
func (f *Store) Close() error {
	f.mu.Lock()
	for n, o := range f.openFiles {
		o.done()
		delete(f.openFiles, n)
	}
	f.mu.Unlock()
	return f.root.Close()
}

// dirOf opens the directory of name (making it with mkdir) and returns
// it with the file's base name. The caller closes the root.
func (f *Store) dirOf(name string, mkdir bool) (*os.Root, string, error) {
	if err := store.CheckName(name); err != nil {
		return nil, "", err
	}
	dir, base := path.Split(name)
	dir = strings.TrimSuffix(dir, "/")
	if dir == "" {
		dir = "."
	}
	// Reached through real directories only (realdir): os.Root follows a
	// link that stays inside the store's directory, and a name's prefix
	// decides who may reach it (pith serve's tenants), so team-a/shared
	// -> ../team-b would open team-b's sessions under team-a's names. The
	// directory opened is compared with the one walked to, so one swapped
	// for a link in between is refused too.
	var (
		walked fs.FileInfo
		err    error
	)
	if mkdir {
		walked, err = realdir.MkdirAll(f.root, dir, 0o755)
	} else {
		walked, err = realdir.Stat(f.root, dir)
	}
	if err == nil {
		var r *os.Root
		if r, err = f.root.OpenRoot(dir); err == nil {
			var got fs.FileInfo
			if got, err = r.Stat("."); err == nil && !os.SameFile(got, walked) {
				err = realdir.ErrSymlink
			}
			if err == nil {
				return r, base, nil
			}
			r.Close()
		}
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, "", fmt.Errorf("%s: %w", name, store.ErrNotFound)
	case errors.Is(err, realdir.ErrSymlink), errors.Is(err, realdir.ErrNotDir):
		return nil, "", fmt.Errorf("%w %q: %v; sessions are reached through real directories only", store.ErrInvalidName, name, err)
	}
	return nil, "", fmt.Errorf("%s: %w", name, err)
}

// open opens the session file name as a Session.
func (f *Store) open(name string) (*Session, func(), error) {
	dir, base, err := f.dirOf(name, false)
	if err != nil {
		return nil, nil, err
	}
	st, err := OpenIn(dir, base, f.opts)
	if err != nil {
		dir.Close()
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, fmt.Errorf("%s: %w", name, store.ErrNotFound)
		}
		return nil, nil, err
	}
	return st, func() { st.Close(); dir.Close() }, nil
}

// Create writes data to a temp file, fsyncs it and links it under name,
// which fails if the name exists: a session appears whole or not at all.
func (f *Store) Create(_ context.Context, name string, data []byte) error {
	if _, err := session.Parse(bytes.Clone(data)); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	dir, base, err := f.dirOf(name, true)
	if err != nil {
		return err
	}
	defer dir.Close()
	removeStaleImports(dir, base)
	var b [6]byte
	rand.Read(b[:])
	tmp := importPrefix(base) + hex.EncodeToString(b[:])
	h, err := dir.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	defer dir.Remove(tmp)
	_, err = h.Write(data)
	if err == nil {
		err = h.Sync()
	}
	if cerr := h.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if err := dir.Link(tmp, base); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%s: %w", name, store.ErrExists)
		}
		return fmt.Errorf("%s: %w", name, err)
	}
	return NewRootFS(dir).SyncDir()
}

// importPrefix starts the names of Create's temp files for base.
// The 12 hex digits of the random part follow; a long base's is cut and
// hashed (session.SideStem), as every side file of a session is.
func importPrefix(base string) string {
	return session.SideStem(".", base, len(".import-")+12) + ".import-"
}

// staleImport is the age past which a Create's temp file is taken for
// one a killed Create left: a live Create holds its own for the time of
// one write and fsync.
const staleImport = time.Hour

// removeStaleImports removes the temp files killed Creates of base left
// in dir; a Create of the same name (the retry after the kill) sweeps
// them, and a live Create's is far younger than staleImport.
func removeStaleImports(dir *os.Root, base string) {
	d, err := dir.Open(".")
	if err != nil {
		return
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	prefix := importPrefix(base)
	for _, n := range names {
		if !strings.HasPrefix(n, prefix) {
			continue
		}
		if fi, err := dir.Lstat(n); err == nil && fi.Mode().IsRegular() && time.Since(fi.ModTime()) > staleImport {
			_ = dir.Remove(n)
		}
	}
}

// Export reads the file under a shared lock, so no locked writer is
// midway through an append.
func (f *Store) Export(ctx context.Context, name string) ([]byte, error) {
	return f.ExportWithin(ctx, name, nil)
}

// ExportWithin is Export that asks admit with the file's size, stat'ed
// under the shared lock, before a byte is read; the read stops at that
// size.
func (f *Store) ExportWithin(_ context.Context, name string, admit func(size int64) error) ([]byte, error) {
	dir, base, err := f.dirOf(name, false)
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	h, err := openRegularIn(dir, base, dir.Stat)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", name, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	defer h.Close()
	if err := h.Lock(false); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	defer h.Unlock()
	st, err := h.Stat()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if admit != nil {
		if err := admit(st.Size()); err != nil {
			return nil, err
		}
	}
	data, err := readAll(h, st.Size())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return data, nil
}

// Load parses the session.
func (f *Store) Load(_ context.Context, name string) (*session.File, error) {
	st, done, err := f.open(name)
	if err != nil {
		return nil, err
	}
	defer done()
	return st.File(), nil
}

// Append appends through Session.AppendWith, which checks the last
// entry under the file's exclusive lock after reading what others wrote.
func (f *Store) Append(_ context.Context, name, expectLast string, drafts ...session.Draft) ([]*session.Entry, error) {
	st, done, err := f.kept(name)
	if err != nil {
		return nil, err
	}
	defer done()
	return st.AppendWith(func(_ *session.Tree, last *session.Entry) (string, error) {
		id := ""
		if last != nil {
			id = last.ID
		}
		if id != expectLast {
			return "", fmt.Errorf("%s: %w", name, store.ErrConflict)
		}
		if len(drafts) > 0 && drafts[0].Parent != nil {
			return *drafts[0].Parent, nil
		}
		return expectLast, nil
	}, drafts...)
}

// Rewrite replaces the file through Session.Update, holding the
// lease file's lock so no takeover interleaves; sidecar appends are cut
// back by Update when the session is not rewritten.
func (f *Store) Rewrite(_ context.Context, lease store.Lease, expectLast string, data []byte, sidecars ...store.SidecarChange) error {
	parsed, err := session.Parse(bytes.Clone(data))
	if err != nil {
		return fmt.Errorf("%s: %w", lease.Session, err)
	}
	for _, sc := range sidecars {
		if err := store.CheckSidecar(lease.Session, sc.Suffix); err != nil {
			return err
		}
	}
	return f.withLease(lease, func() error {
		st, done, err := f.open(lease.Session)
		if err != nil {
			return err
		}
		defer done()
		if st.File().Migrated {
			// A file in an old format is rewritten only by its
			// migration (Update refuses it): make that first, then the
			// change applies to the result. Pith appends nothing to such
			// a file, so its last entry is checked before.
			if store.LastID(st.File()) != expectLast {
				return fmt.Errorf("%s: %w", lease.Session, store.ErrConflict)
			}
			if _, err := st.Migrate(); err != nil {
				return err
			}
			expectLast = store.LastID(st.File())
		}
		return st.Update(func(tx *session.Tx) (*session.File, error) {
			if store.LastID(tx.File()) != expectLast {
				return nil, fmt.Errorf("%s: %w", lease.Session, store.ErrConflict)
			}
			for _, sc := range sidecars {
				if sc.Keep >= 0 {
					cur, err := tx.ReadSidecar(sc.Suffix)
					if err != nil {
						return nil, err
					}
					if int64(len(cur)) > sc.Keep {
						if err := tx.TruncateSidecar(sc.Suffix, sc.Keep); err != nil {
							return nil, err
						}
					}
				}
				if len(sc.Append) > 0 {
					if err := tx.AppendSidecar(sc.Suffix, sc.Append); err != nil {
						return nil, err
					}
				}
			}
			return parsed, nil
		})
	})
}

// ReadSidecar reads the file name+suffix beside the session, a regular
// file only.
func (f *Store) ReadSidecar(_ context.Context, name, suffix string) ([]byte, error) {
	if err := store.CheckSidecar(name, suffix); err != nil {
		return nil, err
	}
	dir, base, err := f.dirOf(name, false)
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	if _, err := dir.Lstat(base); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s: %w", name, store.ErrNotFound)
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	// A sidecar that is a symlink is refused (Lstat), as a Session's
	// Update refuses it.
	h, err := openRegularIn(dir, session.SideName("", base, suffix), dir.Lstat)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s%s: %w", name, suffix, err)
	}
	defer h.Close()
	data, err := io.ReadAll(io.NewSectionReader(h, 0, math.MaxInt64))
	if err != nil {
		return nil, fmt.Errorf("%s%s: %w", name, suffix, err)
	}
	return data, nil
}

// openRegularIn opens name in dir for reading, as a regular file only
// (internal/regularfile: a FIFO in its place must not hang the read, a
// device must not be read as an empty session). stat is the check by
// name: dir.Stat follows a symlink inside dir as dir's OpenFile does,
// dir.Lstat refuses one.
func openRegularIn(dir *os.Root, name string, stat func(string) (fs.FileInfo, error)) (Handle, error) {
	h, err := regularfile.Open(name, os.O_RDONLY, 0, stat, NewRootFS(dir).OpenFile)
	return h, regularfile.Unnamed(err)
}

// List walks the directory for session files.
func (f *Store) List(_ context.Context) ([]string, error) {
	var names []string
	err := fs.WalkDir(f.root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != "." && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() && store.CheckName(p) == nil {
			names = append(names, p)
		}
		return nil
	})
	return store.SkipArchives(names), err
}
