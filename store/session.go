package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/pith-dev/pith/core/session"
)

// SessionOptions tune OpenSession.
type SessionOptions struct {
	// Holder names this host in leases (unique per host and process, e.g.
	// hostname/pid); required for compaction and prune.
	Holder string
	// LeaseTTL is how long a lease lasts unrenewed: how soon another host
	// may take over a session whose compacting host died. Default 30s.
	LeaseTTL time.Duration
	// Timeout bounds each call to the store; default 30s.
	Timeout time.Duration
	Logger  hclog.Logger
	// Admit, when set, is asked with the bytes the handle would hold
	// before it takes in a whole read or a catch-up with what other hosts
	// appended; its error refuses that reading, and the handle keeps what
	// it had. A whole read (an open, a reload after a rewrite) asks it
	// with the session's size, a torn last line included, before a byte
	// is read (Store.ExportWithin), so a session far over the bound is
	// refused without being read into memory; so is a catch-up, where
	// the store knows the size before reading (Store.TailWithin: the
	// files store). The daemon's is
	// served.SessionBound.Admit, the one check of server.maxSessionBytes,
	// so a stored session is refused in the same words as a file.
	Admit func(size int64) error
}

// DefaultLeaseTTL is SessionOptions.LeaseTTL's default.
const DefaultLeaseTTL = 30 * time.Second

// maxAttempts bounds the retries of a write whose parent is fixed or
// chosen at commit time, each after reading what other hosts appended.
const maxAttempts = 20

// Session is an open session of a Store that the engine works on (a
// session.Backend): the parsed entries in memory, caught up with what
// other hosts append through Tail, and writes that commit only against
// the last entry this host saw. A Session is safe for concurrent use; the
// engine serializes its operations anyway.
//
// The leaf follows the session: when other hosts appended, it moves to
// the last entry, as a fresh load would put it (navigation appends a
// marker, so the last entry is the leaf pi and every host see).
type Session struct {
	st   Store
	name string
	opts SessionOptions
	log  hclog.Logger

	mu    sync.Mutex
	file  *session.File
	tree  *session.Tree
	leaf  *session.Entry
	lines int   // complete lines read
	size  int64 // their bytes
	// last is the last of those lines, without its newline: a catch-up
	// reads it again and finds out whether the lines it counts are
	// still the ones it read (a rewrite moves them).
	last  []byte
	lease *Lease // held by HoldLease, nil otherwise
	held  int    // holds of the lease not yet released
	// leaseCtx ends when the held lease is lost; endLease stops renewing
	// it and gives it back, run by whichever hold is released last.
	leaseCtx context.Context
	endLease func()
	// acquiring serialises taking the lease with giving it back, so that
	// a new hold never asks the store for the lease while the last one's
	// is being released.
	acquiring sync.Mutex
}

var (
	_ session.Backend = (*Session)(nil)
	_ session.Leaser  = (*Session)(nil)
)

// OpenSession reads the session name from st.
func OpenSession(ctx context.Context, st Store, name string, opts SessionOptions) (*Session, error) {
	if opts.LeaseTTL <= 0 {
		opts.LeaseTTL = DefaultLeaseTTL
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 30 * time.Second
	}
	s := &Session{st: st, name: name, opts: opts, log: opts.Logger}
	if s.log == nil {
		s.log = hclog.NewNullLogger()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.reload(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// ctx is the context of one call to the store: Backend's methods have
// none, and a store that hangs must not hang the engine.
func (s *Session) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), s.opts.Timeout)
}

// Name is the session's name in the store.
func (s *Session) Name() string { return s.name }

// Path is the session's name, for messages.
func (s *Session) Path() string { return s.name }

// SidecarPath names the companion with suffix in the store.
func (s *Session) SidecarPath(suffix string) string {
	dir, base := path.Split(s.name)
	return dir + session.SideName("", base, suffix)
}

// File returns the session as read so far.
func (s *Session) File() *session.File {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.file
}

// Tree returns the entry index.
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
	e, err := session.LeafAt(s.tree, s.name, id)
	if err != nil {
		return err
	}
	s.leaf = e
	return nil
}

// Refresh reads what other hosts appended since; after a rewrite
// (EventRewritten) call Reload instead.
func (s *Session) Refresh(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.catchUp(ctx)
}

// Reload reads the whole session again.
func (s *Session) Reload(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reload(ctx)
}

// reload reads the whole session; the leaf stays where it was when that
// entry is still there and nothing was added, else it is the last entry.
// The caller holds s.mu.
func (s *Session) reload(ctx context.Context) error {
	// The bound is asked before the read, with every byte the read would
	// take (a torn last line's too, though the view leaves it out): a
	// check after the read would come once the bytes were in memory, the
	// very thing it is there to prevent.
	data, err := s.st.ExportWithin(ctx, s.name, s.admit())
	if err != nil {
		return err
	}
	complete := session.ViewEnd(data)
	if complete == 0 {
		complete = len(data) // not even the header is finished
	}
	f, err := session.Parse(data[:complete])
	if err != nil {
		return fmt.Errorf("%s: %w", s.name, err)
	}
	f.TornTail = len(data) > 0 && data[len(data)-1] != '\n'
	session.LogWarnings(s.log, s.name, f.Warnings)
	var oldLast, oldLeaf string
	if s.tree != nil {
		if l := s.tree.Last(); l != nil {
			oldLast = l.ID
		}
		if s.leaf != nil {
			oldLeaf = s.leaf.ID
		}
	}
	s.file, s.tree = f, session.NewTree(f.Entries)
	s.lines = viewLines(data[:complete])
	s.size = int64(complete)
	s.last = lastLine(data[:complete])
	s.leaf = s.tree.Last()
	if e := s.tree.Get(oldLeaf); e != nil && LastID(f) == oldLast {
		s.leaf = e
	}
	return nil
}

// viewLines is the number of lines in view, the bytes of a session a
// reader takes in (session.ViewEnd): a last line without its newline is
// one, as it is for Store.Tail, which then starts after it.
func viewLines(view []byte) int {
	n := bytes.Count(view, []byte("\n"))
	if len(view) > 0 && view[len(view)-1] != '\n' {
		n++
	}
	return n
}

// lastLine is the last line of view, without its newline.
func lastLine(view []byte) []byte {
	view = bytes.TrimSuffix(view, []byte("\n"))
	return bytes.Clone(view[bytes.LastIndexByte(view, '\n')+1:])
}

// admit is fits for a store's read, nil when there is no bound: a
// store then reads without asking (PostgreSQL without a transaction).
func (s *Session) admit() func(int64) error {
	if s.opts.Admit == nil {
		return nil
	}
	return s.fits
}

// fits asks SessionOptions.Admit whether the handle may hold n bytes.
func (s *Session) fits(n int64) error {
	if s.opts.Admit == nil {
		return nil
	}
	if err := s.opts.Admit(n); err != nil {
		return fmt.Errorf("%s: %w", s.name, err)
	}
	return nil
}

// maxRecheckedLine bounds the last line a catch-up reads again: one of an
// agent's entries (up to 16 MiB) must not be read on every call.
const maxRecheckedLine = 64 << 10

// catchUp adds the lines appended after the ones read. Another host's
// rewrite may have moved lines (it drops blank lines; appends since may
// bring the count back past the lines read), and then the lines after
// the count are not the new ones: it reads the whole session instead
// when the last line read is no longer where it was (read again with the
// new ones, unless it is large) or a new entry's parent is unknown here.
// The caller holds s.mu.
func (s *Session) catchUp(ctx context.Context) error {
	recheck := s.lines > 0 && len(s.last) <= maxRecheckedLine
	from := s.lines
	if recheck {
		from--
	}
	// A store that knows the session's size before reading (files) is
	// refused there what would take the handle past its bound.
	data, n, err := s.st.TailWithin(ctx, s.name, from, s.admit())
	if err != nil {
		return err
	}
	if n < s.lines {
		return s.reload(ctx) // rewritten shorter: line numbers changed
	}
	if recheck {
		rest, ok := AfterLast(data, s.last)
		if !ok {
			s.log.Debug("the session was rewritten elsewhere; reading it whole", "session", s.name)
			return s.reload(ctx)
		}
		data = rest
	}
	if len(data) == 0 {
		return nil
	}
	complete := session.ViewEnd(data)
	if err := s.fits(s.size + int64(complete)); err != nil {
		return err
	}
	s.file.TornTail = data[len(data)-1] != '\n'
	s.size += int64(complete)
	added := false
	rest := data[:complete]
	var lastRead []byte
	defer func() {
		if lastRead != nil {
			s.last = bytes.Clone(lastRead)
		}
	}()
	for len(rest) > 0 {
		l := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			l, rest = rest[:i], rest[i+1:]
		} else {
			rest = nil // a whole entry without its newline (ViewEnd)
		}
		s.lines++
		lastRead = l
		if len(bytes.TrimSpace(l)) == 0 {
			continue
		}
		e, err := session.ParseEntry(bytes.Clone(l))
		if err != nil {
			session.LogWarnings(s.log, s.name, []session.Warning{{Line: s.lines, Reason: err.Error()}})
			continue
		}
		if e.ParentID != "" && !s.tree.Has(e.ParentID) {
			lastRead = nil // reload sets it
			s.log.Debug("a new entry's parent is unknown here; reading the session whole", "session", s.name, "entry", e.ID)
			return s.reload(ctx)
		}
		e.Line = s.lines
		s.file.Entries = append(s.file.Entries, e)
		s.tree.Add(e)
		added = true
	}
	if added {
		s.leaf = s.tree.Last()
	}
	return nil
}

// Append writes drafts below Draft.Parent or the leaf, committing only
// if the session's last entry is still the one this host saw. When
// another host appended meanwhile, it catches up and tries again (at most
// maxAttempts rounds):
//
//   - a draft with an explicit Parent is the caller's fixed choice and
//     goes there, as long as that entry is still in the session;
//   - a draft under the leaf goes under the new leaf, as the files store
//     chains appends at the leaf under its lock, when that leaf continues
//     the entry this append continued (the other hosts appended to the
//     same branch: messages, a compaction of it — the engine tells an
//     answer that predates a compaction as stale). When it does not,
//     because another host moved the session to another branch
//     (navigated), or removed that entry (a prune, a restore), the
//     append has nowhere it belongs: that is the one conflict returned,
//     with nothing written and this handle caught up.
func (s *Session) Append(drafts ...session.Draft) ([]*session.Entry, error) {
	if len(drafts) == 0 {
		return nil, nil
	}
	fixed := drafts[0].Parent != nil
	var want *session.Entry // the entry a leaf append continues
	return s.appendLoop(func(t *session.Tree, _ *session.Entry, attempt int) (string, error) {
		if !fixed {
			if attempt == 0 {
				want = s.leaf
			} else if err := s.stillContinues(t, want); err != nil {
				return "", err
			}
			if s.leaf == nil {
				return "", nil
			}
			return s.leaf.ID, nil
		}
		p := *drafts[0].Parent
		if p != "" && !t.Has(p) {
			return "", fmt.Errorf("%s: no entry with id %q", s.name, p)
		}
		return p, nil
	}, false, drafts)
}

// stillContinues checks, after catching up, that the leaf is want or
// below it: the leaf append that continued want may then go on at the
// leaf. Otherwise the error says why and what the caller does: an
// ErrConflict, nothing written. The caller holds s.mu.
func (s *Session) stillContinues(t *session.Tree, want *session.Entry) error {
	if want == nil {
		return nil // it started the session: what came first is the start
	}
	cur := t.Get(want.ID)
	if cur == nil {
		return fmt.Errorf("%s: %w: entry %s, which this append continued, is no longer in the session (another host rewrote it: a prune or a restore); nothing was written: read the session again and append again if the entries still apply", s.name, ErrConflict, want.ID)
	}
	// Parents come before their children in the session, so the walk up
	// from the leaf passes only entries after want: the ones just read.
	for e, n := s.leaf, 0; e != nil && e.Line >= cur.Line && n <= len(t.Entries); e, n = t.Get(e.ParentID), n+1 {
		if e.ID == cur.ID {
			return nil
		}
	}
	leaf := ""
	if s.leaf != nil {
		leaf = s.leaf.ID
	}
	return fmt.Errorf("%s: %w: another host moved the session to another branch (its leaf is now %s, not below entry %s, which this append continued); nothing was written: read the session again and append again where the entries belong", s.name, ErrConflict, leaf, want.ID)
}

// AppendWith chooses the first parent with parent against the session as
// caught up just before the write, and repeats that on a conflict: the
// compaction's commit, whose rules (see compaction.Persist) then hold
// against what every host appended.
func (s *Session) AppendWith(parent func(t *session.Tree, last *session.Entry) (string, error), drafts ...session.Draft) ([]*session.Entry, error) {
	if parent == nil {
		return s.Append(drafts...)
	}
	return s.appendLoop(func(t *session.Tree, last *session.Entry, _ int) (string, error) {
		return parent(t, last)
	}, true, drafts)
}

// appendLoop writes drafts under the parent pick chooses, expecting the
// last entry read; on ErrConflict it catches up and asks pick again.
// catchUpFirst reads other hosts' appends before the first attempt. Under
// a lease the write also checks the lease.
func (s *Session) appendLoop(pick func(t *session.Tree, last *session.Entry, attempt int) (string, error), catchUpFirst bool, drafts []session.Draft) ([]*session.Entry, error) {
	if len(drafts) == 0 {
		return nil, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ctx, cancel := s.ctx()
	defer cancel()
	if catchUpFirst {
		if err := s.catchUp(ctx); err != nil {
			return nil, err
		}
	}
	d := append([]session.Draft(nil), drafts...)
	for attempt := 0; attempt < maxAttempts; attempt++ {
		pid, err := pick(s.tree, s.tree.Last(), attempt)
		if err != nil {
			return nil, err
		}
		d[0].Parent = &pid
		expect := LastID(s.file)
		var entries []*session.Entry
		if s.lease != nil {
			entries, err = s.st.AppendLeased(ctx, *s.lease, expect, d...)
		} else {
			entries, err = s.st.Append(ctx, s.name, expect, d...)
		}
		if err == nil {
			return s.applyAppended(ctx, entries)
		}
		if !errors.Is(err, ErrConflict) {
			return nil, err
		}
		// Another host appended (catching up finds it), or rewrote the
		// session without changing its last entry (only a reload does).
		read := s.lines
		if err := s.catchUp(ctx); err != nil {
			return nil, err
		}
		if s.lines == read {
			if err := s.reload(ctx); err != nil {
				return nil, err
			}
		}
	}
	return nil, fmt.Errorf("%s: %w (other hosts kept appending first: gave up after %d attempts); nothing was written: send it again", s.name, ErrConflict, maxAttempts)
}

// applyAppended adds the entries this host just wrote and moves the leaf
// to the last: directly when they follow the lines read, else by
// catching up (a torn line was fenced off before them).
func (s *Session) applyAppended(ctx context.Context, entries []*session.Entry) ([]*session.Entry, error) {
	last := entries[len(entries)-1]
	if entries[0].Line == s.lines+1 && !s.file.TornTail {
		for _, e := range entries {
			s.file.Entries = append(s.file.Entries, e)
			s.tree.Add(e)
			s.size += int64(len(e.Raw) + 1)
		}
		s.lines = last.Line
		s.last = bytes.Clone(last.Raw)
		s.leaf = last
		return entries, nil
	}
	if err := s.catchUp(ctx); err != nil {
		return nil, fmt.Errorf("%s: appended, but reading it back failed: %w", s.name, err)
	}
	for i, e := range entries {
		if got := s.tree.Get(e.ID); got != nil {
			entries[i] = got
		}
	}
	if e := s.tree.Get(last.ID); e != nil {
		s.leaf = e
	}
	return entries, nil
}
