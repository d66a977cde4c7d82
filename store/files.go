package store

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/pith-dev/pith/core/compaction"
	"github.com/pith-dev/pith/core/session"
)

// LeaseSuffix names the file beside a session that holds its lease in the
// files store.
const LeaseSuffix = ".lease"

// Files is the default store: pi's JSONL files under one directory, read
// and written through core/session (locking, all-or-nothing appends,
// rewrites that carry over concurrent appends). Every name is resolved
// inside the directory by an os.Root.
type Files struct {
	root *os.Root
	opts session.Options

	mu        sync.Mutex
	watches   map[chan Event]struct{} // each Watch's inbox of published events
	openFiles map[string]*openFile    // sessions kept open for appends
	marks     map[string]tailMark     // where Tail stopped reading
}

// openFile is a session file kept open between appends, so an append
// reads only what others added since (session.Store catches up under its
// lock) instead of parsing the whole file again.
type openFile struct {
	st   *session.Store
	done func()
	refs int
}

// maxOpenFiles bounds the sessions kept open; beyond it, idle ones are
// closed.
const maxOpenFiles = 64

// OpenFiles opens the files store rooted at dir, which must exist.
func OpenFiles(dir string, opts session.Options) (*Files, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("sessions directory: %w", err)
	}
	return &Files{root: root, opts: opts}, nil
}

// Close releases the sessions kept open and the directory.
func (f *Files) Close() error {
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
func (f *Files) dirOf(name string, mkdir bool) (*os.Root, string, error) {
	if err := CheckName(name); err != nil {
		return nil, "", err
	}
	dir, base := path.Split(name)
	dir = strings.TrimSuffix(dir, "/")
	if dir == "" {
		dir = "."
	}
	if mkdir && dir != "." {
		if err := f.root.MkdirAll(dir, 0o755); err != nil {
			return nil, "", fmt.Errorf("%s: %w", name, err)
		}
	}
	r, err := f.root.OpenRoot(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "", fmt.Errorf("%s: %w", name, ErrNotFound)
	}
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", name, err)
	}
	return r, base, nil
}

// open opens the session file name through core/session.
func (f *Files) open(name string) (*session.Store, func(), error) {
	dir, base, err := f.dirOf(name, false)
	if err != nil {
		return nil, nil, err
	}
	st, err := session.OpenIn(dir, base, f.opts)
	if err != nil {
		dir.Close()
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, fmt.Errorf("%s: %w", name, ErrNotFound)
		}
		return nil, nil, err
	}
	return st, func() { st.Close(); dir.Close() }, nil
}

// kept is open for a session kept open between calls; done gives it
// back.
func (f *Files) kept(name string) (*session.Store, func(), error) {
	f.mu.Lock()
	if o := f.openFiles[name]; o != nil {
		o.refs++
		f.mu.Unlock()
		return o.st, func() { f.giveBack(o) }, nil
	}
	f.mu.Unlock()
	st, done, err := f.open(name)
	if err != nil {
		return nil, nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if o := f.openFiles[name]; o != nil { // opened meanwhile: use that one
		done()
		o.refs++
		return o.st, func() { f.giveBack(o) }, nil
	}
	if f.openFiles == nil {
		f.openFiles = map[string]*openFile{}
	}
	if len(f.openFiles) >= maxOpenFiles {
		for n, o := range f.openFiles {
			if o.refs == 0 {
				o.done()
				delete(f.openFiles, n)
				break
			}
		}
	}
	o := &openFile{st: st, done: done, refs: 1}
	f.openFiles[name] = o
	return st, func() { f.giveBack(o) }, nil
}

func (f *Files) giveBack(o *openFile) {
	f.mu.Lock()
	o.refs--
	f.mu.Unlock()
}

// Create writes data to a temp file, fsyncs it and links it under name,
// which fails if the name exists: a session appears whole or not at all.
func (f *Files) Create(_ context.Context, name string, data []byte) error {
	if _, err := session.Parse(bytes.Clone(data)); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	dir, base, err := f.dirOf(name, true)
	if err != nil {
		return err
	}
	defer dir.Close()
	var b [6]byte
	rand.Read(b[:])
	tmp := "." + base + ".import-" + hex.EncodeToString(b[:])
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
			return fmt.Errorf("%s: %w", name, ErrExists)
		}
		return fmt.Errorf("%s: %w", name, err)
	}
	return session.NewRootFS(dir).SyncDir()
}

// Export reads the file under a shared lock, so no locked writer is
// midway through an append.
func (f *Files) Export(_ context.Context, name string) ([]byte, error) {
	dir, base, err := f.dirOf(name, false)
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	h, err := session.NewRootFS(dir).OpenFile(base, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", name, ErrNotFound)
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
	data := make([]byte, st.Size())
	if _, err := h.ReadAt(data, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return data, nil
}

// Tail returns what follows line after. It remembers, per session, how
// many lines end before which offset of which file, so a reader catching
// up reads only the bytes appended since (a rename over the session, a
// rewrite, is another file: read whole).
func (f *Files) Tail(_ context.Context, name string, after int) ([]byte, int, error) {
	dir, base, err := f.dirOf(name, false)
	if err != nil {
		return nil, 0, err
	}
	defer dir.Close()
	h, err := session.NewRootFS(dir).OpenFile(base, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, fmt.Errorf("%s: %w", name, ErrNotFound)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", name, err)
	}
	defer h.Close()
	// Shared: no locked writer is midway through an append.
	if err := h.Lock(false); err != nil {
		return nil, 0, fmt.Errorf("%s: %w", name, err)
	}
	defer h.Unlock()
	st, err := h.Stat()
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", name, err)
	}
	var from tailMark
	f.mu.Lock()
	m, ok := f.marks[name]
	f.mu.Unlock()
	if ok && os.SameFile(m.file, st) && m.off <= st.Size() && m.lines <= after && m.still(h) {
		from = m
	}
	data := make([]byte, st.Size()-from.off)
	if _, err := h.ReadAt(data, from.off); err != nil && !errors.Is(err, io.EOF) {
		return nil, 0, fmt.Errorf("%s: %w", name, err)
	}
	tail, n := TailOf(data, after-from.lines)
	complete := bytes.LastIndexByte(data, '\n') + 1
	f.mu.Lock()
	if f.marks == nil || len(f.marks) >= maxMarks {
		f.marks = map[string]tailMark{}
	}
	mark := tailMark{file: st, lines: from.lines + bytes.Count(data[:complete], []byte("\n")), off: from.off + int64(complete)}
	if k := min(complete, len(mark.end)); k > 0 {
		mark.endLen = copy(mark.end[:], data[complete-k:complete])
	} else {
		mark.end, mark.endLen = from.end, from.endLen
	}
	f.marks[name] = mark
	f.mu.Unlock()
	return tail, from.lines + n, nil
}

// tailMark says lines complete lines of file end at offset off, and
// what the bytes before off were: a file that got the same inode after a
// rewrite freed it is told apart by them.
type tailMark struct {
	file   fs.FileInfo
	lines  int
	off    int64
	end    [64]byte
	endLen int
}

// still reports whether h has the mark's bytes before its offset.
func (m tailMark) still(h session.Handle) bool {
	if m.endLen == 0 {
		return m.off == 0
	}
	buf := make([]byte, m.endLen)
	if _, err := h.ReadAt(buf, m.off-int64(m.endLen)); err != nil {
		return false
	}
	return bytes.Equal(buf, m.end[:m.endLen])
}

// maxMarks bounds the remembered tail positions.
const maxMarks = 4096

// Load parses the session.
func (f *Files) Load(_ context.Context, name string) (*session.File, error) {
	st, done, err := f.open(name)
	if err != nil {
		return nil, err
	}
	defer done()
	return st.File(), nil
}

// Append appends through session.Store.AppendWith, which checks the last
// entry under the file's exclusive lock after reading what others wrote.
func (f *Files) Append(_ context.Context, name, expectLast string, drafts ...session.Draft) ([]*session.Entry, error) {
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
			return "", fmt.Errorf("%s: %w", name, ErrConflict)
		}
		if len(drafts) > 0 && drafts[0].Parent != nil {
			return *drafts[0].Parent, nil
		}
		return expectLast, nil
	}, drafts...)
}

// AppendLeased is Append under the lease file's lock, after checking
// lease still holds.
func (f *Files) AppendLeased(ctx context.Context, lease Lease, expectLast string, drafts ...session.Draft) ([]*session.Entry, error) {
	var entries []*session.Entry
	err := f.withLease(lease, func() error {
		var err error
		entries, err = f.Append(ctx, lease.Session, expectLast, drafts...)
		return err
	})
	return entries, err
}

// withLease runs fn holding the lease file's lock, when lease is still
// the session's, so no takeover interleaves.
func (f *Files) withLease(lease Lease, fn func() error) error {
	return f.withLeaseFile(lease.Session, func(h session.Handle) error {
		holder, expires, err := readLease(h)
		if err != nil {
			return err
		}
		if holder != lease.Holder || !time.Now().Before(expires) {
			return fmt.Errorf("%s: %w", lease.Session, ErrLeaseLost)
		}
		return fn()
	})
}

// Rewrite replaces the file through session.Store.Update, holding the
// lease file's lock so no takeover interleaves; sidecar appends are cut
// back by Update when the session is not rewritten.
func (f *Files) Rewrite(_ context.Context, lease Lease, expectLast string, data []byte, sidecars ...SidecarChange) error {
	parsed, err := session.Parse(bytes.Clone(data))
	if err != nil {
		return fmt.Errorf("%s: %w", lease.Session, err)
	}
	for _, sc := range sidecars {
		if err := CheckSidecar(lease.Session, sc.Suffix); err != nil {
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
			if LastID(st.File()) != expectLast {
				return fmt.Errorf("%s: %w", lease.Session, ErrConflict)
			}
			if _, err := st.Migrate(); err != nil {
				return err
			}
			expectLast = LastID(st.File())
		}
		return st.Update(func(tx *session.Tx) (*session.File, error) {
			if LastID(tx.File()) != expectLast {
				return nil, fmt.Errorf("%s: %w", lease.Session, ErrConflict)
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
func (f *Files) ReadSidecar(_ context.Context, name, suffix string) ([]byte, error) {
	if err := CheckSidecar(name, suffix); err != nil {
		return nil, err
	}
	dir, base, err := f.dirOf(name, false)
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	if _, err := dir.Lstat(base); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s: %w", name, ErrNotFound)
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	st, err := dir.Lstat(base + suffix)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s%s: %w", name, suffix, err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s%s: not a regular file", name, suffix)
	}
	data, err := dir.ReadFile(base + suffix)
	if err != nil {
		return nil, fmt.Errorf("%s%s: %w", name, suffix, err)
	}
	return data, nil
}

// Publish hands the event to every Watch of this Files value: files have
// no channel between processes, and one host serves a sessions directory.
func (f *Files) Publish(ctx context.Context, name string, payload []byte) error {
	if err := CheckName(name); err != nil {
		return err
	}
	if len(payload) > MaxPayload {
		return fmt.Errorf("%s: %w (%d bytes, at most %d)", name, ErrPayloadTooLarge, len(payload), MaxPayload)
	}
	if !json.Valid(payload) {
		return fmt.Errorf("%s: the event payload is not JSON", name)
	}
	ev := Event{Session: name, Kind: EventPublished, Payload: bytes.Clone(payload)}
	f.mu.Lock()
	inboxes := make([]chan Event, 0, len(f.watches))
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
func (f *Files) subscribe() (chan Event, func()) {
	c := make(chan Event, 64)
	f.mu.Lock()
	if f.watches == nil {
		f.watches = map[chan Event]struct{}{}
	}
	f.watches[c] = struct{}{}
	f.mu.Unlock()
	return c, func() {
		f.mu.Lock()
		delete(f.watches, c)
		f.mu.Unlock()
	}
}

// withLeaseFile runs fn with the session's lease file open and locked.
func (f *Files) withLeaseFile(name string, fn func(h session.Handle) error) error {
	dir, base, err := f.dirOf(name, false)
	if err != nil {
		return err
	}
	defer dir.Close()
	if _, err := dir.Lstat(base); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%s: %w", name, ErrNotFound)
		}
		return fmt.Errorf("%s: %w", name, err)
	}
	h, err := session.NewRootFS(dir).OpenFile(base+LeaseSuffix, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("%s: lease: %w", name, err)
	}
	defer h.Close()
	if err := h.Lock(true); err != nil {
		return fmt.Errorf("%s: lease: %w", name, err)
	}
	defer h.Unlock()
	return fn(h)
}

// readLease reads "holder\nexpiry-unix-nanos\n"; an empty file is no lease.
func readLease(h session.Handle) (string, time.Time, error) {
	st, err := h.Stat()
	if err != nil {
		return "", time.Time{}, err
	}
	buf := make([]byte, min(st.Size(), 4096))
	if _, err := h.ReadAt(buf, 0); err != nil && !errors.Is(err, io.EOF) {
		return "", time.Time{}, err
	}
	holder, rest, ok := strings.Cut(string(buf), "\n")
	if !ok {
		return "", time.Time{}, nil
	}
	ns, err := strconv.ParseInt(strings.TrimSpace(rest), 10, 64)
	if err != nil {
		return "", time.Time{}, nil // a torn lease file holds nothing
	}
	return holder, time.Unix(0, ns), nil
}

func writeLease(h session.Handle, holder string, expires time.Time) error {
	if err := h.Truncate(0); err != nil {
		return err
	}
	w, ok := h.(io.WriterAt)
	if !ok {
		return errors.New("lease file cannot be written at an offset")
	}
	if _, err := w.WriteAt([]byte(holder+"\n"+strconv.FormatInt(expires.UnixNano(), 10)+"\n"), 0); err != nil {
		return err
	}
	return h.Sync()
}

// AcquireLease takes or renews the lease under the lease file's lock.
func (f *Files) AcquireLease(_ context.Context, name, holder string, ttl time.Duration) (Lease, error) {
	if holder == "" || strings.Contains(holder, "\n") {
		return Lease{}, errors.New("a lease holder is a non-empty single line")
	}
	var l Lease
	err := f.withLeaseFile(name, func(h session.Handle) error {
		cur, expires, err := readLease(h)
		if err != nil {
			return err
		}
		now := time.Now()
		if cur != "" && cur != holder && now.Before(expires) {
			return fmt.Errorf("%s: %w (%s, until %s)", name, ErrLeaseHeld, cur, expires.UTC().Format(time.RFC3339))
		}
		l = Lease{Session: name, Holder: holder, Expires: now.Add(ttl)}
		return writeLease(h, holder, l.Expires)
	})
	return l, err
}

// ReleaseLease empties the lease file when lease still holds it.
func (f *Files) ReleaseLease(_ context.Context, lease Lease) error {
	return f.withLeaseFile(lease.Session, func(h session.Handle) error {
		cur, _, err := readLease(h)
		if err != nil || cur != lease.Holder {
			return err
		}
		if err := h.Truncate(0); err != nil {
			return err
		}
		return h.Sync()
	})
}

// List walks the directory for session files.
func (f *Files) List(_ context.Context) ([]string, error) {
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
		if d.Type().IsRegular() && CheckName(p) == nil {
			names = append(names, p)
		}
		return nil
	})
	sort.Strings(names)
	// A session's prune archive (NAME.pruned.jsonl beside it) has a
	// session's name but is its companion, not a session.
	keep := make([]string, 0, len(names))
	for i, n := range names {
		if base, ok := strings.CutSuffix(n, compaction.ArchiveSuffix); ok {
			if j := sort.SearchStrings(names, base); j < len(names) && names[j] == base && j != i {
				continue
			}
		}
		keep = append(keep, n)
	}
	return keep, err
}

// Watch reports changes to session files seen by fsnotify in the
// directory and its subdirectories, also those made later. A rename
// over a session (a rewrite) shows as a Create of its name, so a Create of
// a name seen before is reported as a rewrite.
func (f *Files) Watch(ctx context.Context) (<-chan Event, error) {
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
	out := make(chan Event, 64)
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
				if CheckName(rel) != nil {
					continue
				}
				kind := ""
				switch {
				case ev.Has(fsnotify.Create) && known[rel]:
					kind = EventRewritten
				case ev.Has(fsnotify.Create):
					kind, known[rel] = EventCreated, true
				case ev.Has(fsnotify.Write):
					kind = EventAppended
				default:
					continue
				}
				select {
				case out <- Event{Session: rel, Kind: kind}:
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
func newSessions(root *os.Root, dir string, known map[string]bool) []Event {
	var evs []Event
	fs.WalkDir(root.FS(), dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && CheckName(p) == nil && !known[p] {
			known[p] = true
			evs = append(evs, Event{Session: p, Kind: EventCreated})
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
