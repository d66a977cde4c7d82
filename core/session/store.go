package session

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Store is an open session file: the parsed entries, the current leaf, and
// appends that are safe against other processes writing the same file.
//
// Every append takes an exclusive flock on the file, first reads whatever
// other writers appended since this Store last looked (so ids stay unique
// and no line is missed), then writes all new lines with one write call and
// fsyncs. A Store is safe for concurrent use.
type Store struct {
	mu   sync.Mutex
	path string
	fd   *os.File
	file *File
	tree *Tree
	leaf *Entry
	// size is how many bytes of the file this Store has read; a torn last
	// line is not counted, so it is read again once completed.
	size int64
	log  hclog.Logger
	now  func() time.Time
	rand io.Reader
}

// ErrOldVersion refuses appends to a v1 or v2 file, which is read through
// an in-memory migration.
var ErrOldVersion = errors.New("the session file is in an old format (version 1 or 2)")

// Options tune Open and Create.
type Options struct {
	Logger hclog.Logger // warnings about skipped lines; default: discard
	// Now and Random replace the clock and the id source, for reproducible
	// files (the bundled demo session, tests). Default: the real ones.
	Now    func() time.Time
	Random io.Reader
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

// Open opens an existing session file for reading and appending.
func Open(path string, opts Options) (*Store, error) {
	fd, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		if errors.Is(err, fs.ErrPermission) {
			// A read-only file can still be read; appends will fail clearly.
			fd, err = os.Open(path)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, unwrapPathError(err))
		}
	}
	s := &Store{path: path, fd: fd, log: opts.logger(), now: opts.clock(), rand: opts.random()}
	if err := s.load(); err != nil {
		fd.Close()
		return nil, err
	}
	return s, nil
}

// Create makes a new session file with a fresh header and opens it. It fails
// if the file exists.
func Create(path, cwd string, opts Options) (*Store, error) {
	fd, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, unwrapPathError(err))
	}
	header, _ := json.Marshal(struct {
		Type      string `json:"type"`
		Version   int    `json:"version"`
		ID        string `json:"id"`
		Timestamp string `json:"timestamp"`
		Cwd       string `json:"cwd"`
	}{TypeSession, CurrentVersion, newUUID(opts.random()), isoTime(opts.clock()()), cwd})
	if err := writeAllSync(fd, append(header, '\n')); err != nil {
		fd.Close()
		os.Remove(path)
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	s := &Store{path: path, fd: fd, log: opts.logger(), now: opts.clock(), rand: opts.random()}
	if err := s.load(); err != nil {
		fd.Close()
		return nil, err
	}
	return s, nil
}

// OpenOrCreate opens path, or creates it when it does not exist.
func OpenOrCreate(path, cwd string, opts Options) (*Store, error) {
	s, err := Open(path, opts)
	if errors.Is(err, fs.ErrNotExist) {
		s, err = Create(path, cwd, opts)
		if errors.Is(err, fs.ErrExist) {
			return Open(path, opts) // another process created it first
		}
	}
	return s, err
}

// Load reads and parses a session file without keeping it open.
func Load(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, unwrapPathError(err))
	}
	f, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

func (s *Store) load() error {
	if err := flock(s.fd, syscall.LOCK_SH); err != nil {
		return fmt.Errorf("%s: lock: %w", s.path, err)
	}
	defer flock(s.fd, syscall.LOCK_UN)
	st, err := s.fd.Stat()
	if err != nil {
		return fmt.Errorf("%s: %w", s.path, err)
	}
	data := make([]byte, st.Size())
	if _, err := io.ReadFull(io.NewSectionReader(s.fd, 0, st.Size()), data); err != nil {
		return fmt.Errorf("%s: read: %w", s.path, err)
	}
	f, err := Parse(data)
	if err != nil {
		return fmt.Errorf("%s: %w", s.path, err)
	}
	for _, w := range f.Warnings {
		s.log.Warn("skipped a line of the session file", "file", s.path, "line", w.Line, "reason", w.Reason)
	}
	s.file = f
	s.tree = NewTree(f.Entries)
	s.leaf = s.tree.Last()
	s.size = int64(len(data))
	if f.TornTail {
		s.size = int64(bytes.LastIndexByte(data, '\n') + 1)
	}
	return nil
}

// Close releases the file.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fd == nil {
		return nil
	}
	err := s.fd.Close()
	s.fd = nil
	return err
}

// Path is the session file's path.
func (s *Store) Path() string { return s.path }

// File returns the parsed file. Callers must not modify it.
func (s *Store) File() *File {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.file
}

// Tree returns the entry index. Callers must not modify it.
func (s *Store) Tree() *Tree {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tree
}

// Leaf returns the current leaf, nil in an empty session.
func (s *Store) Leaf() *Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.leaf
}

// SetLeaf moves the leaf in memory ("" moves it before the first entry).
func (s *Store) SetLeaf(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id == "" {
		s.leaf = nil
		return nil
	}
	e := s.tree.Get(id)
	if e == nil {
		return fmt.Errorf("%s: no entry with id %q", s.path, id)
	}
	s.leaf = e
	return nil
}

// Draft is an entry to append. The Store fills type, id, parentId and
// timestamp; Fields (a struct, a map or json.RawMessage of an object) gives
// the rest.
type Draft struct {
	Type string
	// Parent is the parent id; nil means the current leaf, a pointer to ""
	// makes a root.
	Parent *string
	Fields any
}

// Append writes drafts as new entries, each a child of the previous one (the
// first a child of Draft.Parent or the current leaf), and moves the leaf to
// the last. All lines go out in one write, then fsync, under the lock.
func (s *Store) Append(drafts ...Draft) ([]*Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fd == nil {
		return nil, fmt.Errorf("%s: the session is closed", s.path)
	}
	if len(drafts) == 0 {
		return nil, nil
	}
	if s.file.Migrated {
		// The ids of a v1 file exist only in memory; an entry pointing at
		// them would dangle for pi, and Pith never rewrites a file unasked.
		return nil, fmt.Errorf("%s: %w; run `pith migrate --in-place %s` first", s.path, ErrOldVersion, s.path)
	}
	if err := flock(s.fd, syscall.LOCK_EX); err != nil {
		return nil, fmt.Errorf("%s: lock: %w", s.path, err)
	}
	defer flock(s.fd, syscall.LOCK_UN)
	if err := s.catchUp(); err != nil {
		return nil, err
	}
	parent := ""
	if s.leaf != nil {
		parent = s.leaf.ID
	}
	var buf bytes.Buffer
	if s.file.TornTail {
		// Never glue a new line onto a line a crash left unfinished.
		buf.WriteByte('\n')
	}
	pending := make(map[string]bool, len(drafts))
	entries := make([]*Entry, 0, len(drafts))
	for i, d := range drafts {
		if i == 0 && d.Parent != nil {
			parent = *d.Parent
		}
		id := s.newID(pending)
		line, err := buildLine(d, id, parent, isoTime(s.now()))
		if err != nil {
			return nil, fmt.Errorf("%s: append %s entry: %w", s.path, d.Type, err)
		}
		e, err := ParseEntry(line)
		if err != nil {
			return nil, fmt.Errorf("%s: append %s entry: %w", s.path, d.Type, err)
		}
		entries = append(entries, e)
		buf.Write(line)
		buf.WriteByte('\n')
		parent = id
	}
	if err := writeAllSync(s.fd, buf.Bytes()); err != nil {
		return nil, fmt.Errorf("%s: append: %w", s.path, err)
	}
	s.size += int64(buf.Len())
	s.file.TornTail = false
	for _, e := range entries {
		s.file.Entries = append(s.file.Entries, e)
		s.tree.Add(e)
	}
	s.leaf = entries[len(entries)-1]
	return entries, nil
}

// catchUp reads lines other processes appended since this Store last read
// the file. It runs under the exclusive lock.
func (s *Store) catchUp() error {
	st, err := s.fd.Stat()
	if err != nil {
		return fmt.Errorf("%s: %w", s.path, err)
	}
	if cur, err := os.Stat(s.path); err == nil && !os.SameFile(st, cur) {
		// The file was atomically rewritten (prune, migrate) by someone else.
		return fmt.Errorf("%s: the file was replaced on disk; reopen it", s.path)
	}
	if st.Size() <= s.size {
		return nil
	}
	data := make([]byte, st.Size()-s.size)
	if _, err := s.fd.ReadAt(data, s.size); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("%s: read: %w", s.path, err)
	}
	complete := bytes.LastIndexByte(data, '\n') + 1
	s.file.TornTail = complete < len(data)
	line := len(s.file.Entries) + len(s.file.Skipped) + 1
	rest := data[:complete]
	for len(rest) > 0 {
		var l []byte
		l, rest = nextLine(rest)
		line++
		if len(bytes.TrimSpace(l)) == 0 {
			continue
		}
		e, err := ParseEntry(l)
		if err != nil {
			s.log.Warn("skipped a line of the session file", "file", s.path, "line", line, "reason", err.Error())
			continue
		}
		e.Line = line
		s.file.Entries = append(s.file.Entries, e)
		s.tree.Add(e)
	}
	s.size += int64(complete)
	return nil
}

// newID returns 8 lowercase hex characters unused in the file.
func (s *Store) newID(pending map[string]bool) string {
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

// buildLine lays out an entry as pi does: type, id, parentId, timestamp,
// then the draft's own fields in their order.
func buildLine(d Draft, id, parent, ts string) ([]byte, error) {
	var fields []byte
	switch v := d.Fields.(type) {
	case nil:
	case json.RawMessage:
		fields = v
	case []byte:
		fields = v
	default:
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			return nil, err
		}
		fields = bytes.TrimSpace(b.Bytes())
	}
	fields = bytes.TrimSpace(fields)
	if len(fields) > 0 && (fields[0] != '{' || fields[len(fields)-1] != '}') {
		return nil, errors.New("fields must be a JSON object")
	}
	var b bytes.Buffer
	b.WriteString(`{"type":`)
	b.WriteString(quote(d.Type))
	b.WriteString(`,"id":"`)
	b.WriteString(id)
	b.WriteString(`","parentId":`)
	if parent == "" {
		b.WriteString("null")
	} else {
		b.WriteString(quote(parent))
	}
	b.WriteString(`,"timestamp":"`)
	b.WriteString(ts)
	b.WriteByte('"')
	if len(fields) >= 2 {
		if inner := bytes.TrimSpace(fields[1 : len(fields)-1]); len(inner) > 0 {
			b.WriteByte(',')
			b.Write(inner)
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// WriteAtomic replaces path with what write produces: a temp file in the
// same directory, fsync, the original permissions, rename, then an fsync of
// the directory. On any error the original file is untouched.
func WriteAtomic(path string, write func(io.Writer) error) error {
	perm := fs.FileMode(0o644)
	if st, err := os.Stat(path); err == nil {
		perm = st.Mode().Perm()
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
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
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// Rewrite replaces the session file atomically with f's encoding while
// holding the exclusive lock, so no append from another process is lost
// between reading and renaming. The Store then reads the new file.
func (s *Store) Rewrite(f *File) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.file.Migrated {
		return fmt.Errorf("%s: %w; run `pith migrate --in-place %s` first", s.path, ErrOldVersion, s.path)
	}
	if err := flock(s.fd, syscall.LOCK_EX); err != nil {
		return fmt.Errorf("%s: lock: %w", s.path, err)
	}
	st, err := s.fd.Stat()
	if err != nil {
		flock(s.fd, syscall.LOCK_UN)
		return fmt.Errorf("%s: %w", s.path, err)
	}
	if st.Size() != s.size && !(s.file.TornTail && st.Size() > s.size) {
		flock(s.fd, syscall.LOCK_UN)
		return fmt.Errorf("%s: the file changed on disk since it was read; reopen and retry", s.path)
	}
	err = WriteAtomic(s.path, f.Encode)
	flock(s.fd, syscall.LOCK_UN)
	if err != nil {
		return err
	}
	fd, err := os.OpenFile(s.path, os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("%s: %w", s.path, unwrapPathError(err))
	}
	s.fd.Close()
	s.fd = fd
	leafID := ""
	if s.leaf != nil {
		leafID = s.leaf.ID
	}
	if err := s.load(); err != nil {
		return err
	}
	if e := s.tree.Get(leafID); e != nil {
		s.leaf = e
	}
	return nil
}

func flock(f *os.File, how int) error {
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if err != syscall.EINTR {
			return err
		}
	}
}

func writeAllSync(f *os.File, b []byte) error {
	if _, err := f.Write(b); err != nil {
		return err
	}
	return f.Sync()
}

func isoTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

func newUUID(r io.Reader) string {
	var b [16]byte
	io.ReadFull(r, b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
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
