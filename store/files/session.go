// Package files keeps sessions as pi's JSONL files: Session is one open
// session file and its write protocol (write.go) — the advisory lock,
// all-or-nothing appends with their intent record for a kill's torn
// append (intent.go), rewrites that carry over what other writers (pi,
// without a lock) appended, detection of a file overwritten in place
// (edge.go) and of a replaced one, sidecars beside the file — all through
// an FS rooted at the session's directory (fs.go). Every writer of a
// session file goes through it: the CLI, the daemon and the files store.
package files

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/pith-dev/pith/core/session"
)

// Session is an open session file: the parsed entries, the current leaf, and
// writes that are safe against other processes writing the same file.
//
// Every write takes an exclusive lock on the file, makes sure the path
// still names the file it locked (reopening it when a rewrite replaced it),
// and follows the write protocol of write.go: appends are all-or-nothing,
// rewrites carry over whatever other writers — pi's unlocked appends too —
// added meanwhile. All file operations go through an FS rooted at the
// session's directory. A Session is safe for concurrent use.
type Session struct {
	mu   sync.Mutex
	fsys FS
	root *os.Root // owned by the Session (Open, Create); nil for OpenIn
	name string   // the file's name in fsys
	path string   // the name to show the user
	// hideName: path is Options.Display; the file's own name (and its
	// sidecars') is not shown either.
	hideName bool
	fd       Handle
	// readOnly is set when the file cannot or must not be written: opened
	// read-only, or without an owner write bit (root can write those).
	readOnly   bool
	singleLink bool
	file       *session.File
	tree       *session.Tree
	leaf       *session.Entry
	// size is how many bytes of the file this Session has read; a torn last
	// line (one that is not a whole entry yet) is not counted, so it is
	// read again once completed.
	size int64
	// refreshed is the file's size when Refresh last read it (Behind).
	refreshed int64
	// rewrites counts the times this Session read its file whole again
	// because it was overwritten in place (Rewrites).
	rewrites uint64
	// stamp is the file's change time (changeStamp) when this Session's
	// view last matched it: a file of the same size with another stamp
	// was written to since (edgeHolds).
	stamp int64
	// edge is the file's last bytes before size as this Session read or
	// wrote them (edge.go): a file overwritten in place no longer has
	// them there.
	edge []byte
	log  hclog.Logger
	now  func() time.Time
	rand io.Reader
	// intent is the open append intent sidecar (intent.go), opened at the
	// first write; noIntent is set when it cannot be created.
	intent    Handle
	noIntent  bool
	intentBuf [intentSize]byte
	// lastIntent is the record of this Session's last append that went
	// through whole (the zero value when there is none).
	lastIntent appendIntent
	// admit is Options.Admit.
	admit func(size int64) error
}

// Options tune Open and Create.
type Options struct {
	Logger hclog.Logger // warnings about skipped lines; default: discard
	// Now and Random replace the clock and the id source, for reproducible
	// files (the bundled demo session, tests). Default: the real ones.
	Now    func() time.Time
	Random io.Reader
	// SingleLink refuses every write to a file with more than one hard
	// link (pith serve: a link could name a file outside its root).
	// Rewrites refuse such files always.
	SingleLink bool
	// WrapFS, when set, wraps the FS the Session works through; tests use it
	// to inject faults into every file operation (internal/faultfs).
	WrapFS func(FS) FS
	// Display, when set, is how the Session names the file in its errors
	// and log lines, instead of the name it was opened by, and the file's
	// sidecars go unnamed too. pith serve sets it: one open file serves
	// every name it is reached by (a hard link in another tenant's tree),
	// and an error must not tell one caller another's name.
	Display string
	// Admit, when set, is asked with the file's size before every reading
	// of it — whole, or the lines other writers appended — and its error
	// refuses the read before a byte of it is taken in: the Session keeps
	// the view it had, and the error comes back as it is. pith serve
	// holds its sessions to server.maxSessionBytes so, however another
	// writer grows them.
	Admit func(size int64) error
}

// display is how a Session opened by name names its file in messages.
func (o Options) display(name string) string {
	if o.Display != "" {
		return o.Display
	}
	return name
}

func (o Options) clock() func() time.Time {
	if o.Now == nil {
		return time.Now
	}
	return o.Now
}

func (o Options) random() io.Reader {
	if o.Random == nil {
		return rand.Reader
	}
	return o.Random
}

func (o Options) logger() hclog.Logger {
	if o.Logger == nil {
		return hclog.NewNullLogger()
	}
	return o.Logger
}

func (o Options) fs(root *os.Root) FS {
	var fsys FS = NewRootFS(root)
	if o.WrapFS != nil {
		fsys = o.WrapFS(fsys)
	}
	return fsys
}

// Open opens an existing session file for reading and appending. A
// symlink is resolved first: the Session works on the target, in the
// target's directory, so rewrites replace the target and keep the link.
func Open(path string, opts Options) (*Session, error) {
	root, name, err := openRoot(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	s, err := open(opts.fs(root), name, opts.display(path), opts)
	if err != nil {
		root.Close()
		return nil, err
	}
	s.root = root
	return s, nil
}

// OpenIn opens the session file name inside root; every operation stays
// inside root. name must be a regular file, not a symlink. The caller
// keeps root open while the Session is in use.
func OpenIn(root *os.Root, name string, opts Options) (*Session, error) {
	return open(opts.fs(root), name, opts.display(name), opts)
}

func open(fsys FS, name, display string, opts Options) (*Session, error) {
	s := &Session{fsys: fsys, name: name, path: display, hideName: opts.Display != "", log: opts.logger(), now: opts.clock(), rand: opts.random(), singleLink: opts.SingleLink, admit: opts.Admit}
	fd, err := openRegular(fsys, name, os.O_RDWR|os.O_APPEND)
	if errors.Is(err, fs.ErrPermission) {
		// A read-only file can still be read; writes fail clearly.
		fd, err = openRegular(fsys, name, os.O_RDONLY)
		s.readOnly = true
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", display, err)
	}
	s.fd = fd
	if err := s.load(); err != nil {
		fd.Close()
		return nil, err
	}
	return s, nil
}

// Create makes a new session file with a fresh header and opens it. It fails
// if the file exists.
func Create(path, cwd string, opts Options) (*Session, error) {
	root, err := os.OpenRoot(filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, unwrapPathError(err))
	}
	s, err := create(opts.fs(root), filepath.Base(path), opts.display(path), cwd, opts)
	if err != nil {
		root.Close()
		return nil, err
	}
	s.root = root
	return s, nil
}

// CreateIn makes a new session file name inside root, as Create does.
func CreateIn(root *os.Root, name, cwd string, opts Options) (*Session, error) {
	return create(opts.fs(root), name, opts.display(name), cwd, opts)
}

func create(fsys FS, name, display, cwd string, opts Options) (*Session, error) {
	fd, err := fsys.OpenFile(name, os.O_RDWR|os.O_APPEND|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", display, unwrapPathError(err))
	}
	if _, err = fd.Write(opts.HeaderLine(cwd)); err == nil {
		err = fd.Sync()
	}
	if err == nil {
		err = fsys.SyncDir()
	}
	if err != nil {
		fd.Close()
		fsys.Remove(name)
		return nil, fmt.Errorf("%s: create: %w", display, err)
	}
	s := &Session{fsys: fsys, name: name, path: display, hideName: opts.Display != "", fd: fd, log: opts.logger(), now: opts.clock(), rand: opts.random(), singleLink: opts.SingleLink, admit: opts.Admit}
	if err := s.load(); err != nil {
		fd.Close()
		return nil, err
	}
	return s, nil
}

// OpenOrCreate opens path, or creates it when it does not exist.
func OpenOrCreate(path, cwd string, opts Options) (*Session, error) {
	s, err := Open(path, opts)
	if errors.Is(err, fs.ErrNotExist) {
		s, err = Create(path, cwd, opts)
		if errors.Is(err, fs.ErrExist) {
			return Open(path, opts) // another process created it first
		}
	}
	return s, err
}

// OpenReadOnly opens a session file or one of its sidecars (the prune
// archive) for reading with the checks every session open gets: only a
// regular file (a FIFO or a device would hang or never end), reached
// through a root at its directory.
func OpenReadOnly(path string) (io.ReadCloser, error) {
	root, name, err := openRoot(path)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	h, err := openRegular(NewRootFS(root), name, os.O_RDONLY)
	if err != nil {
		return nil, err
	}
	st, err := h.Stat()
	if err != nil {
		h.Close()
		return nil, err
	}
	return struct {
		io.Reader
		io.Closer
	}{io.NewSectionReader(h, 0, st.Size()), h}, nil
}

// LoadIn is Load of the file name inside root, read only when admit
// (nil: any size) lets its size in — its error comes back as it is: how
// a daemon reads a session for another program's writer without opening
// it for writing.
func LoadIn(root *os.Root, name string, admit func(size int64) error) (*session.File, error) {
	return loadFS(NewRootFS(root), name, name, admit)
}

func loadFS(fsys FS, name, display string, admit func(size int64) error) (*session.File, error) {
	h, err := openRegular(fsys, name, os.O_RDONLY)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", display, err)
	}
	defer h.Close()
	st, err := h.Stat()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", display, err)
	}
	if admit != nil {
		if err := admit(st.Size()); err != nil {
			return nil, err
		}
	}
	data, err := readAll(h, st.Size())
	if err != nil {
		return nil, fmt.Errorf("%s: read: %w", display, err)
	}
	f, err := session.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", display, err)
	}
	return f, nil
}

// load reads the whole file under a shared lock.
func (s *Session) load() error {
	if err := s.fd.Lock(false); err != nil {
		return fmt.Errorf("%s: lock: %w", s.path, err)
	}
	defer s.fd.Unlock()
	return s.loadLocked()
}

// loadLocked reads the whole file; the caller holds a lock on it. The
// leaf stays where it was when that entry is still there.
func (s *Session) loadLocked() error { return s.viewLocked(s.readLocked) }

// readLocked reads and parses the first st.Size() bytes of the open file,
// up to its last complete line.
func (s *Session) readLocked(st fs.FileInfo) (*session.File, int64, error) {
	if err := s.admitted(st.Size()); err != nil {
		return nil, 0, err
	}
	data, err := readAll(s.fd, st.Size())
	if err != nil {
		return nil, 0, fmt.Errorf("%s: read: %w", s.path, err)
	}
	// An unfinished last line that is not yet a whole entry (ViewEnd) is
	// left out of the Session's view and of s.size: most often it is pi's
	// append caught halfway (a write that crosses a page boundary becomes
	// visible in parts), which the next catchUp or a rewrite's carry-over
	// picks up whole from s.size. Were it parsed here, a rewrite would
	// write the fragment and then carry over the finished line again: one
	// line torn, one doubled.
	torn := len(data) > 0 && data[len(data)-1] != '\n'
	complete := session.ViewEnd(data)
	f, err := session.Parse(data[:complete])
	if err != nil && complete < len(data) && errors.Is(err, session.ErrNotSession) {
		// Not even the header line is finished: read it as it is (a
		// rewrite then writes it whole, so nothing is carried over).
		complete = len(data)
		f, err = session.Parse(data)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", s.path, err)
	}
	f.TornTail = torn
	session.LogWarnings(s.log, s.path, f.Warnings)
	return f, int64(complete), nil
}

// admitted asks Options.Admit whether a file of size bytes may be read.
func (s *Session) admitted(size int64) error {
	if s.admit == nil {
		return nil
	}
	return s.admit(size)
}

// viewLocked replaces the Session's view of its file; the caller holds a
// lock on it. It is the one place that (1) notes a file without an owner
// write bit as read-only, (2) installs the view read gives — the
// entries of the file's first size bytes — and reads what follows them
// (lines another process appended), and (3) keeps the leaf on the entry
// it was on when that entry is still there, else on the last entry.
// read gets the open file's stat, taken first; an error from it leaves
// the view as it was.
func (s *Session) viewLocked(read func(st fs.FileInfo) (f *session.File, size int64, err error)) error {
	st, err := s.fd.Stat()
	if err != nil {
		return fmt.Errorf("%s: %w", s.path, err)
	}
	if st.Mode().Perm()&0o200 == 0 {
		s.readOnly = true
	}
	leafID := ""
	if s.leaf != nil {
		leafID = s.leaf.ID
	}
	f, size, err := read(st)
	if err != nil {
		return err
	}
	s.file = f
	s.tree = session.NewTree(f.Entries)
	s.leaf = s.tree.Last()
	s.size = size
	s.stamp = changeStamp(st)
	if err := s.readEdge(); err != nil {
		return err
	}
	// After readLocked nothing complete follows size (at most the torn
	// last line, read again and left out again); after a rewrite, the
	// lines carried over into the new file do.
	if err := s.catchUp(st); err != nil {
		return err
	}
	s.leaf = s.tree.Last()
	if e := s.tree.Get(leafID); leafID != "" && e != nil {
		s.leaf = e
	}
	return nil
}

// Close releases the file (and the directory root Open made).
func (s *Session) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fd == nil {
		return nil
	}
	err := s.fd.Close()
	s.fd = nil
	if s.intent != nil {
		s.intent.Close()
		s.intent = nil
	}
	if s.root != nil {
		s.root.Close()
	}
	return err
}

// Path is the session file's path as given to Open.
func (s *Session) Path() string { return s.path }

// SidecarPath is the path, for messages, of the sidecar file with the
// given suffix (it lives next to the session file, a link's target).
func (s *Session) SidecarPath(suffix string) string {
	if s.root != nil {
		return filepath.Join(s.root.Name(), s.sideName(suffix))
	}
	return s.sideName(suffix)
}

// sideName is the name of the session's sidecar with the suffix, in its
// directory.
func (s *Session) sideName(suffix string) string { return session.SideName("", s.name, suffix) }

// ReadOnly reports whether writes will be refused with ErrReadOnly.
func (s *Session) ReadOnly() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.readOnly
}

// File returns the parsed file. Callers must not modify it.
func (s *Session) File() *session.File {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.file
}

// Tree returns the entry index. Callers must not modify it.
func (s *Session) Tree() *session.Tree {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tree
}

// Leaf returns the current leaf, nil in an empty session.
func (s *Session) Leaf() *session.Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.leaf
}

// SetLeaf moves the leaf in memory ("" moves it before the first entry).
func (s *Session) SetLeaf(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, err := session.LeafAt(s.tree, s.path, id)
	if err != nil {
		return err
	}
	s.leaf = e
	return nil
}

// newID returns 8 lowercase hex characters unused in the file.
func (s *Session) newID(pending map[string]bool) string {
	var b [4]byte
	for {
		if _, err := io.ReadFull(s.rand, b[:]); err != nil {
			panic("session: id source failed: " + err.Error())
		}
		id := hex.EncodeToString(b[:])
		if !s.tree.Has(id) && !pending[id] {
			pending[id] = true
			return id
		}
	}
}

// WriteAtomic replaces path with what write produces: a temp file in the
// same directory, fsync, the original permissions, rename, then an fsync of
// the directory. On any error the original file is untouched. A path that
// is a symlink is written through: the file it leads to is replaced and
// the link stays (a rename over the link would have replaced the link
// itself with a file, leaving its target as it was).
func WriteAtomic(path string, write func(io.Writer) error) error {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	perm := fs.FileMode(0o644)
	if st, err := os.Stat(path); err == nil {
		perm = st.Mode().Perm()
	}
	dir := filepath.Dir(path)
	// CreateTemp puts up to 10 digits in the place of the *.
	tmp, err := os.CreateTemp(dir, session.SideStem(".", filepath.Base(path), len(".tmp-")+10)+".tmp-*")
	if err != nil {
		return fmt.Errorf("%s: %w", path, unwrapPathError(err))
	}
	done := false
	defer func() {
		if !done {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := write(tmp); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := tmp.Chmod(perm); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("%s: %w", path, unwrapPathError(err))
	}
	done = true
	// The rename is durable once the directory is: a failure here is
	// reported (the new content is in place, but may not survive a crash).
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("%s: written, but its directory could not be synced: %w", path, unwrapPathError(err))
	}
	defer d.Close()
	// (Windows cannot sync a directory, and some file systems refuse to.)
	if err := d.Sync(); err != nil && runtime.GOOS != "windows" && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, errors.ErrUnsupported) {
		return fmt.Errorf("%s: written, but its directory could not be synced: %w", path, err)
	}
	return nil
}

// HeaderLine is a new session's first line as pi writes it (current
// version, a fresh UUID from Random, the time from Now, cwd), with its
// newline: what every store writes to create a session.
func (o Options) HeaderLine(cwd string) []byte {
	return session.NewHeaderLine(cwd, o.clock()(), o.random())
}

// unwrapPathError drops the *PathError wrapper, whose text repeats the path
// the caller already names.
func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
