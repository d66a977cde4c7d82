package files

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/internal/regularfile"
)

// The write protocol. Every change Pith makes to a session file or its
// sidecars goes through the functions of this file, under the file's
// exclusive lock:
//
//   - An append remembers the size, writes all its lines in one write,
//     fsyncs, and on any error truncates back to that size and fsyncs
//     again; "unchanged" is reported only when the size was verified.
//   - A rewrite writes a temp file next to the session, then copies over
//     every byte other writers appended since the Session read the file —
//     pi appends without a lock — until the size is stable, locks the temp
//     file, renames it over the session, copies what reached the old file
//     during the rename — on Linux until no other process has the old file
//     open (drainReplaced) — and fsyncs the directory.
//   - A writer that waited for the lock checks that the path still names
//     the file it locked; if a rewrite replaced it, it reopens and rereads.
//   - An append records its intent first, and every writer, once it holds
//     the lock, cuts off a piece of an append a kill left (intent.go).

// ErrChanged refuses a rewrite prepared from a file that was replaced on
// disk since.
var ErrChanged = errors.New("the session file was replaced on disk while the change was prepared; run it again")

// unchanged marks err as leaving the session unchanged.
func unchanged(err error) error {
	if err == nil || errors.Is(err, session.ErrUnchanged) {
		return err
	}
	return fmt.Errorf("%w; %w", err, session.ErrUnchanged)
}

// maxReopen bounds how often a writer follows replacements of the file
// before giving up (each one means another process rewrote it meanwhile).
const maxReopen = 100

// lockFresh takes the exclusive lock on the file the path names now,
// reopening and rereading it when a rewrite replaced it. It reports
// whether it did, and the locked file's stat. The caller holds s.mu and
// unlocks s.fd when done.
func (s *Session) lockFresh() (replaced bool, held fs.FileInfo, err error) {
	for range maxReopen {
		if err := s.fd.Lock(true); err != nil {
			return replaced, nil, fmt.Errorf("%s: lock: %w", s.path, err)
		}
		held, err := s.fd.Stat()
		if err != nil {
			s.fd.Unlock()
			return replaced, nil, fmt.Errorf("%s: %w", s.path, err)
		}
		current := false
		if n, ok := regularfile.LinkCount(held); ok && n == 1 {
			// A rename over the name drops the old file's last link, so
			// one link means the name still leads here; this saves a path
			// lookup on every append. (A rewrite refuses files with more.)
			current = true
		} else {
			cur, err := s.fsys.Stat(s.name)
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				s.fd.Unlock()
				return replaced, nil, fmt.Errorf("%s: %w", s.path, unwrapPathError(err))
			}
			if err != nil {
				s.fd.Unlock()
				return replaced, nil, fmt.Errorf("%s: the session file is gone: %w", s.path, unwrapPathError(err))
			}
			current = os.SameFile(held, cur)
		}
		if current {
			undone, err := s.recoverTornAppend(held, replaced)
			if err != nil {
				s.fd.Unlock()
				return replaced, nil, err
			}
			if !replaced && !undone {
				// Overwritten in place: what follows s.size is not lines
				// appended to what this Session read. Read it afresh, as
				// after a replacement by rename.
				over, err := s.overwritten(held)
				if err != nil {
					s.fd.Unlock()
					return replaced, nil, err
				}
				if over {
					s.rewrites++
				}
				replaced = over
			}
			if undone {
				if held, err = s.fd.Stat(); err != nil {
					s.fd.Unlock()
					return replaced, nil, fmt.Errorf("%s: %w", s.path, err)
				}
			}
			if replaced || undone {
				if err := s.loadLocked(); err != nil {
					s.fd.Unlock()
					return replaced, nil, err
				}
			}
			return replaced, held, nil
		}
		s.fd.Unlock()
		flag := os.O_RDWR | os.O_APPEND
		if s.readOnly {
			flag = os.O_RDONLY
		}
		fd, err := openRegular(s.fsys, s.name, flag)
		if err != nil {
			return replaced, nil, fmt.Errorf("%s: reopen: %w", s.path, err)
		}
		s.fd.Close()
		s.fd = fd
		// The rewrite that replaced the file removed the intent sidecar
		// (its record named the old file): open it afresh by name.
		s.dropIntent()
		replaced = true
	}
	return replaced, nil, fmt.Errorf("%s: the file keeps being replaced; try again", s.path)
}

// checkWritable refuses writes to a read-only or (when asked) multiply
// linked file before anything is touched.
func (s *Session) checkWritable(rewrite bool) error {
	if s.fd == nil {
		return fmt.Errorf("%s: the session is closed", s.path)
	}
	if s.readOnly {
		return fmt.Errorf("%s: %w", s.path, session.ErrReadOnly)
	}
	if !rewrite && !s.singleLink {
		return nil
	}
	st, err := s.fd.Stat()
	if err != nil {
		return fmt.Errorf("%s: %w", s.path, err)
	}
	if n, ok := regularfile.LinkCount(st); ok && n > 1 {
		return fmt.Errorf("%s: %w (%d)", s.path, ErrHardLinked, n)
	}
	return nil
}

// catchUp reads lines other processes appended since this Session last read
// the file, whose stat under the exclusive lock is st.
func (s *Session) catchUp(st fs.FileInfo) error {
	if st.Size() < s.size {
		return s.loadLocked() // cut back by someone: read it afresh
	}
	if st.Size() == s.size {
		s.stamp = changeStamp(st)
		return nil
	}
	// Before the new bytes are read: the view stays as it was.
	if err := s.admitted(st.Size()); err != nil {
		return err
	}
	data := make([]byte, st.Size()-s.size)
	if _, err := s.fd.ReadAt(data, s.size); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("%s: read: %w", s.path, err)
	}
	complete := session.ViewEnd(data)
	s.file.TornTail = data[len(data)-1] != '\n'
	line := len(s.file.Entries) + len(s.file.Skipped) + 1
	rest := data[:complete]
	copied := false // s.file.Skipped is this call's own copy
	var last *session.Entry
	for len(rest) > 0 {
		var l []byte
		l, rest, _ = bytes.Cut(rest, []byte{'\n'})
		line++
		if len(bytes.TrimSpace(l)) == 0 {
			continue
		}
		e, err := session.ParseEntry(l)
		if err != nil {
			session.LogWarnings(s.log, s.path, []session.Warning{{Line: line, Reason: err.Error()}})
			// Kept like Parse keeps it, so a rewrite writes it back; in a
			// new map (made once per catch-up), as callers may be reading
			// the old one.
			if !copied {
				skipped := maps.Clone(s.file.Skipped)
				if skipped == nil {
					skipped = map[int][]byte{}
				}
				s.file.Skipped, copied = skipped, true
			}
			s.file.Skipped[line] = l
			continue
		}
		e.Line = line
		s.file.Entries = append(s.file.Entries, e)
		s.tree.Add(e)
		last = e
	}
	s.size += int64(complete)
	s.extendEdge(data[:complete])
	s.stamp = changeStamp(st)
	if last != nil {
		// Another writer went on: the leaf follows it to the last entry,
		// where a fresh load of the file puts it and where pi goes on,
		// so that a write after this one continues the session rather
		// than forking it around the other writer's entries. (A rewrite
		// that carried lines over keeps its leaf: viewLocked.)
		s.leaf = last
	}
	return nil
}

// Append writes drafts as new entries, each a child of the previous one (the
// first a child of Draft.Parent or the current leaf), and moves the leaf to
// the last. All lines go out in one write, then fsync, under the lock; on
// failure the file is cut back to its size before.
func (s *Session) Append(drafts ...session.Draft) ([]*session.Entry, error) {
	return s.AppendWith(nil, drafts...)
}

// AppendWith is Append with the parent of the first draft chosen under the
// lock, after reading what other processes appended: parent gets the tree
// and its last entry in file order and returns the parent id ("" for a
// root), or an error that cancels the append with the file unchanged.
// parent nil means Draft.Parent or the current leaf.
func (s *Session) AppendWith(parent func(t *session.Tree, last *session.Entry) (string, error), drafts ...session.Draft) (_ []*session.Entry, err error) {
	written := false
	defer func() {
		if !written {
			err = unchanged(err)
		}
	}()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkWritable(false); err != nil {
		return nil, err
	}
	if len(drafts) == 0 {
		return nil, nil
	}
	if s.file.Migrated {
		// The ids of a v1 file exist only in memory; an entry pointing at
		// them would dangle for pi, and Pith never rewrites a file unasked.
		return nil, fmt.Errorf("%s: %w; run `pith migrate --in-place %s` first", s.path, session.ErrOldVersion, s.path)
	}
	_, held, err := s.lockFresh()
	if err != nil {
		return nil, err
	}
	defer s.fd.Unlock()
	if err := s.catchUp(held); err != nil {
		return nil, err
	}
	if s.file.Migrated {
		return nil, fmt.Errorf("%s: %w; run `pith migrate --in-place %s` first", s.path, session.ErrOldVersion, s.path)
	}
	pid := ""
	if s.leaf != nil {
		pid = s.leaf.ID
	}
	if drafts[0].Parent != nil {
		pid = *drafts[0].Parent
	}
	if parent != nil {
		var err error
		if pid, err = parent(s.tree, s.tree.Last()); err != nil {
			return nil, err
		}
	}
	if pid != "" && !s.tree.Has(pid) {
		// An explicit parent chosen before the lock (a navigation's
		// target) may be gone: the file was replaced meanwhile. An entry
		// below it would dangle.
		return nil, fmt.Errorf("%s: no entry with id %q (the file changed since it was chosen)", s.path, pid)
	}
	var buf bytes.Buffer
	if s.file.TornTail {
		// Never glue a new line onto a line a crash left unfinished.
		buf.WriteByte('\n')
	}
	pending := make(map[string]bool, len(drafts))
	entries := make([]*session.Entry, 0, len(drafts))
	previous := ""
	for _, d := range drafts {
		if d.OfPrevious != nil {
			if previous == "" {
				return nil, fmt.Errorf("%s: append %s entry: it refers to a previous draft and is the first", s.path, d.Type)
			}
			d.Fields = d.OfPrevious(previous)
		}
		id := s.newID(pending)
		line, err := session.BuildLine(d, id, pid, s.now())
		if err != nil {
			return nil, fmt.Errorf("%s: append %s entry: %w", s.path, d.Type, err)
		}
		e, err := session.ParseEntry(line)
		if err != nil {
			return nil, fmt.Errorf("%s: append %s entry: %w", s.path, d.Type, err)
		}
		entries = append(entries, e)
		buf.Write(line)
		buf.WriteByte('\n')
		pid, previous = id, id
	}
	written = true
	fence := int64(0)
	if s.file.TornTail {
		fence = 1 // a newline ending another's line, not part of the append
	}
	start, exact, err := appendAllFrom(s.fd, buf.Bytes(), func(at int64) error {
		return s.recordIntent(held, at+fence, buf.Bytes()[fence:])
	})
	switch {
	case err == nil:
		s.finishIntent()
	case errors.Is(err, session.ErrUnchanged):
		s.clearIntent()
	default:
		// Kept when cutting back failed, so the next writer finishes it.
	}
	if err != nil {
		return nil, fmt.Errorf("%s: append: %w", s.path, err)
	}
	if start != s.size || !exact && !s.nothingAfter(start+int64(buf.Len())) {
		// Bytes nobody has read lie before or after ours: an unfinished
		// line we fenced off, or a pi append that came between catchUp
		// and our write. s.size would stop marking what was read, and a
		// later catch-up or rewrite would copy a part of a line twice.
		// Read the file afresh; this is rare.
		last := entries[len(entries)-1].ID
		if err := s.loadLocked(); err != nil {
			return nil, fmt.Errorf("%s: appended, but reading it back failed: %w", s.path, err)
		}
		for i, e := range entries {
			if got := s.tree.Get(e.ID); got != nil {
				entries[i] = got
			}
		}
		if e := s.tree.Get(last); e != nil {
			s.leaf = e
		}
		return entries, nil
	}
	s.size += int64(buf.Len())
	s.extendEdge(buf.Bytes())
	// The file's change time after this Session's own write, so that the
	// next look takes it for unchanged without a read (edgeHolds). Not
	// known, the next look reads the edge once.
	if st, err := s.fd.Stat(); err == nil && st.Size() == s.size {
		s.stamp = changeStamp(st)
	}
	s.file.TornTail = false
	line := len(s.file.Entries) + len(s.file.Skipped) + 1
	for _, e := range entries {
		line++
		e.Line = line
		s.file.Entries = append(s.file.Entries, e)
		s.tree.Add(e)
	}
	s.leaf = entries[len(entries)-1]
	return entries, nil
}

// nothingAfter reports whether the file ends at end: then bytes appended
// from a size read before the write landed there. The caller holds the
// lock.
func (s *Session) nothingAfter(end int64) bool {
	st, err := s.fd.Stat()
	return err == nil && st.Size() == end
}

// appendAll appends data to h in one write and fsyncs; on failure it cuts
// h back to its size before and says whether that was verified. The caller
// holds h's exclusive lock.
func appendAll(h Handle, data []byte) error {
	_, _, err := appendAllFrom(h, data, nil)
	return err
}

// appendAllFrom is appendAll reporting where the data landed: exactly,
// from the file offset an O_APPEND write leaves behind, when h can tell
// it; otherwise the size before the write (exact false), which an
// unlocked writer may have moved. intent, when set, is told where the
// write is about to land; its error cancels the write.
func appendAllFrom(h Handle, data []byte, intent func(at int64) error) (start int64, exact bool, err error) {
	st, err := h.Stat()
	if err != nil {
		return 0, false, err
	}
	before := st.Size()
	if intent != nil {
		if err := intent(before); err != nil {
			return before, false, unchanged(err)
		}
	}
	_, err = h.Write(data)
	if err == nil {
		err = h.Sync()
	}
	if err != nil {
		return before, false, undoAppend(h, before, err)
	}
	if sk, ok := h.(io.Seeker); ok {
		if end, err := sk.Seek(0, io.SeekCurrent); err == nil {
			return end - int64(len(data)), true, nil
		}
	}
	return before, false, nil
}

// undoAppend cuts h back to size after a failed append.
func undoAppend(h Handle, size int64, cause error) error {
	terr := h.Truncate(size)
	if terr == nil {
		// Verified by size, whether or not the fsync below succeeds: a
		// failed fsync of a truncate cannot bring the cut bytes back
		// into the file others read.
		h.Sync()
		st, err := h.Stat()
		if err == nil && st.Size() == size {
			return fmt.Errorf("%w; %w", cause, session.ErrUnchanged)
		}
		terr = err
		if terr == nil {
			terr = fmt.Errorf("the size is %d, not %d", st.Size(), size)
		}
	}
	return fmt.Errorf("%w, and cutting back the partial write failed too (%v): the file may end in a partial line, which the next write fences off (%w)", cause, terr, session.ErrIncomplete)
}

// sidecars are the files beside a session file as its Update's Tx sees
// them, under the session's exclusive lock. Appends are undone when the
// change is not written (finish).
type sidecars struct {
	s    *Session
	undo []sidecarAppend
}

// sidecarAppend is an append to undo when the session is not rewritten.
type sidecarAppend struct {
	h      Handle
	before int64
}

// Read returns the sidecar with the suffix; nil when there is none.
func (sc *sidecars) Read(suffix string) ([]byte, error) {
	s := sc.s
	name := s.sideName(suffix)
	h, err := openRegular(s.fsys, name, os.O_RDONLY)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.SidecarPath(suffix), err)
	}
	defer h.Close()
	st, err := h.Stat()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.SidecarPath(suffix), err)
	}
	data, err := readAll(h, st.Size())
	if err != nil {
		return nil, fmt.Errorf("%s: read: %w", s.SidecarPath(suffix), err)
	}
	return data, nil
}

// Truncate cuts the sidecar back to size and fsyncs it: a torn record at
// its end (a crash mid-append) is removed before the next one.
func (sc *sidecars) Truncate(suffix string, size int64) error {
	s := sc.s
	h, err := openRegular(s.fsys, s.sideName(suffix), os.O_RDWR)
	if err != nil {
		return fmt.Errorf("%s: %w", s.SidecarPath(suffix), err)
	}
	defer h.Close()
	err = h.Truncate(size)
	if err == nil {
		err = h.Sync()
	}
	if err != nil {
		return fmt.Errorf("%s: repair: %w", s.SidecarPath(suffix), err)
	}
	return nil
}

// Append appends data to the sidecar with the suffix, creating it, all or
// nothing; finish cuts it back if the session is not rewritten.
func (sc *sidecars) Append(suffix string, data []byte) error {
	s := sc.s
	name := s.sideName(suffix)
	h, created, err := regularfile.OpenOrCreate(name, os.O_RDWR|os.O_APPEND, 0o644, s.fsys.Lstat, s.fsys.OpenFile)
	if err != nil {
		return fmt.Errorf("%s: %w", s.SidecarPath(suffix), regularfile.Unnamed(unwrapPathError(err)))
	}
	if created {
		if err := s.fsys.SyncDir(); err != nil {
			h.Close()
			s.fsys.Remove(name)
			return fmt.Errorf("%s: %w", s.SidecarPath(suffix), err)
		}
	}
	st, err := h.Stat()
	if err != nil {
		h.Close()
		return fmt.Errorf("%s: %w", s.SidecarPath(suffix), err)
	}
	if err := appendAll(h, data); err != nil {
		h.Close()
		return fmt.Errorf("%s: %w", s.SidecarPath(suffix), err)
	}
	sc.undo = append(sc.undo, sidecarAppend{h, st.Size()})
	return nil
}

// finish closes the sidecars, first cutting back what was appended when
// the session was not rewritten.
func (sc *sidecars) finish(rewritten bool) {
	for i := len(sc.undo) - 1; i >= 0; i-- {
		u := sc.undo[i]
		if !rewritten {
			undoAppend(u.h, u.before, errors.New("the session was not rewritten"))
		}
		u.h.Close()
	}
	sc.undo = nil
}

// Update runs change under the exclusive lock and replaces the session
// file with the File it returns (nil: no rewrite), carrying over every
// byte other writers appended meanwhile. On any error before the rename
// the session file is untouched and sidecar appends made through the Tx
// are cut back.
func (s *Session) Update(change func(tx *session.Tx) (*session.File, error)) error {
	return s.update(false, false, change)
}

// Rewrite replaces the session file with f, which must be derived from
// File() with the same entries (prune, restore): Update with a fixed
// result. A file replaced on disk since is refused with ErrChanged.
func (s *Session) Rewrite(f *session.File) error {
	return s.update(false, true, func(tx *session.Tx) (*session.File, error) {
		if len(f.Entries) != len(tx.File().Entries) {
			return nil, fmt.Errorf("%s: %w", s.path, ErrChanged)
		}
		return f, nil
	})
}

// Migrate writes a v1 or v2 file in the current format, in place, through
// the same protocol. It reports whether the file needed it.
func (s *Session) Migrate() (bool, error) {
	changed := false
	err := s.update(true, false, func(tx *session.Tx) (*session.File, error) {
		if !tx.File().Migrated {
			return nil, nil
		}
		changed = true
		return tx.File(), nil
	})
	return changed, err
}

// update is Update; migrate allows rewriting a file read through an
// in-memory migration, failIfReplaced refuses to go on when the file was
// replaced since the Session read it.
func (s *Session) update(migrate, failIfReplaced bool, change func(tx *session.Tx) (*session.File, error)) (err error) {
	renamed := false
	defer func() {
		if !renamed {
			err = unchanged(err)
		}
	}()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkWritable(true); err != nil {
		return err
	}
	replaced, _, err := s.lockFresh()
	if err != nil {
		return err
	}
	locked := s.fd
	defer func() { locked.Unlock() }()
	if replaced && failIfReplaced {
		return fmt.Errorf("%s: %w", s.path, ErrChanged)
	}
	if err := s.checkWritable(true); err != nil {
		return err
	}
	if s.file.Migrated && !migrate {
		return fmt.Errorf("%s: %w; run `pith migrate --in-place %s` first", s.path, session.ErrOldVersion, s.path)
	}
	s.removeStaleTemps()
	side := &sidecars{s: s}
	f, err := change(session.NewTx(s.file, s.tree, s.leaf, s.path, side))
	if err != nil || f == nil {
		side.finish(false)
		return err
	}
	renamed, err = s.rewriteLocked(f)
	if renamed {
		locked = s.fd // the new file, locked before the rename
		s.removeStaleIntent()
	}
	side.finish(renamed)
	return err
}

// tempRandLen is the length of the random part of a rewrite's temp file
// name (8 bytes in hex).
const tempRandLen = 16

// tempPrefix starts the name of a rewrite's temp file for a session; the
// random part follows. A long name's is cut and hashed (SideStem).
func tempPrefix(name string) string {
	return session.SideStem(".", name, len(".tmp-")+tempRandLen) + ".tmp-"
}

// isTempOf reports whether n is the name of a rewrite's temp file of the
// session with prefix tempPrefix(name) — and not, say, the temp file of
// a session whose name merely starts with the same bytes.
func isTempOf(n, prefix string) bool {
	rest, ok := strings.CutPrefix(n, prefix)
	if !ok || len(rest) != tempRandLen {
		return false
	}
	_, err := hex.DecodeString(rest)
	return err == nil
}

// rewriteLocked replaces the session file with f plus everything appended
// beyond s.size, as described at the top of this file. renamed reports
// whether the new file is in place (an error after that is about the
// durability of the directory entry or of late carried-over bytes).
func (s *Session) rewriteLocked(f *session.File) (renamed bool, err error) {
	st, err := s.fd.Stat()
	if err != nil {
		return false, fmt.Errorf("%s: %w", s.path, err)
	}
	var rnd [8]byte
	if _, err := io.ReadFull(s.rand, rnd[:]); err != nil {
		return false, fmt.Errorf("%s: %w", s.path, err)
	}
	tmpName := tempPrefix(s.name) + hex.EncodeToString(rnd[:])
	perm := st.Mode().Perm()
	tmp, err := s.fsys.OpenFile(tmpName, os.O_RDWR|os.O_APPEND|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return false, fmt.Errorf("%s: rewrite: %w", s.path, unwrapPathError(err))
	}
	fail := func(err error) (bool, error) {
		tmp.Close()
		s.fsys.Remove(tmpName)
		return false, fmt.Errorf("%s: rewrite: %w", s.path, err)
	}
	carried := s.size
	if err := f.Encode(tmp); err != nil {
		return fail(err)
	}
	// Nothing else writes to the temp file before it has the name, so its
	// size now is where f ends and the carried-over lines begin.
	encoded, err := tmp.Stat()
	if err != nil {
		return fail(err)
	}
	if err := s.carryOver(tmp, &carried); err != nil {
		return fail(err)
	}
	if err := tmp.Chmod(perm); err != nil {
		return fail(err)
	}
	keepOwner(tmp, st)
	if err := tmp.Sync(); err != nil {
		return fail(err)
	}
	// Lock the new file before it gets the name, so a writer that opens
	// the name after the rename waits until the late bytes are in.
	if err := tmp.Lock(true); err != nil {
		return fail(err)
	}
	if err := s.carryOver(tmp, &carried); err != nil {
		return fail(err)
	}
	if err := tmp.Sync(); err != nil {
		return fail(err)
	}
	if err := s.fsys.Rename(tmpName, s.name); err != nil {
		return fail(unwrapPathError(err))
	}
	old := s.fd
	s.fd = tmp
	// pi may have written to the old file after the last look and before
	// the rename: those bytes are still in the old file, copy them.
	lateErr := s.carryOverFrom(old, tmp, &carried, false)
	// Pith's writers waiting for the old file's lock now find it replaced
	// and let go of it; then only a pi append in flight may hold it.
	old.Unlock()
	if lateErr == nil {
		lateErr = s.drainReplaced(old, tmp, &carried)
	}
	if lateErr == nil {
		lateErr = tmp.Sync()
	}
	old.Close()
	dirErr := s.fsys.SyncDir()
	if err := s.adoptLocked(f, encoded.Size()); err != nil {
		return true, fmt.Errorf("%w (%w)", err, session.ErrIncomplete)
	}
	switch {
	case lateErr != nil:
		return true, fmt.Errorf("%s: rewritten, but lines appended during the rewrite could not be copied (%v); they are in no file now (%w)", s.path, lateErr, session.ErrIncomplete)
	case dirErr != nil:
		return true, fmt.Errorf("%s: rewritten, but the directory could not be synced (%v): a power loss now could bring the old file back (%w)", s.path, dirErr, session.ErrIncomplete)
	}
	return true, nil
}

// adoptLocked makes f, which the new file starts with (encoded bytes),
// the Session's view of it, and reads only the lines carried over after it.
// Rereading the whole file would cost a second copy of it and a parse of
// every line (hundreds of megabytes for a large session); the entries of
// f are the ones just written, so only their line numbers can differ.
// Entries that were never in a file, or moved, are parsed again from
// their bytes, so the view is what a reread would give. A migrated file
// (whose lines were upgraded in memory) is reread.
func (s *Session) adoptLocked(f *session.File, encoded int64) error {
	if f.Migrated {
		return s.loadLocked()
	}
	nf, ok := renumbered(f)
	if !ok {
		return s.loadLocked() // a line a reread would skip
	}
	return s.viewLocked(func(fs.FileInfo) (*session.File, int64, error) { return nf, encoded, nil })
}

// renumbered is f as Encode writes it — the header, then the skipped
// lines and entries in order, one line each — with every line number
// where that puts it. ok is false when an entry that must be renumbered
// no longer parses (a reread would skip it).
func renumbered(f *session.File) (nf *session.File, ok bool) {
	nf = &session.File{Header: f.Header, Entries: make([]*session.Entry, 0, len(f.Entries)), Warnings: f.Warnings}
	var skipped []int
	for l := range f.Skipped {
		skipped = append(skipped, l)
	}
	sort.Ints(skipped)
	line := 1
	keep := func(l int) {
		line++
		if nf.Skipped == nil {
			nf.Skipped = make(map[int][]byte, len(f.Skipped))
		}
		nf.Skipped[line] = f.Skipped[l]
	}
	for _, e := range f.Entries {
		for len(skipped) > 0 && e.Line != 0 && skipped[0] < e.Line {
			keep(skipped[0])
			skipped = skipped[1:]
		}
		line++
		if e.Line != line {
			// Entries are shared with readers outside the lock: never
			// renumber one in place.
			ne, err := session.ParseEntry(e.Raw)
			if err != nil {
				return nil, false
			}
			ne.Line = line
			e = ne
		}
		nf.Entries = append(nf.Entries, e)
	}
	for _, l := range skipped {
		keep(l)
	}
	return nf, true
}

// drainWait bounds how long a rewrite waits for other processes to close
// the file it replaced. pi opens, writes and closes within microseconds
// unless the machine is overloaded; a Session idling in another process
// keeps the file open until its next write, and costs a rewrite this
// wait (that Session loses nothing: it checks for a replacement under the
// lock before it writes).
var drainWait = 250 * time.Millisecond

// drainReplaced closes the last window of an unlocked append: pi opened
// the old file before the rename and writes after the last copy. It
// copies what reaches the old file until no other process has it open
// (the file has no name now, so nobody can open it again and the last
// copy is complete), or drainWait has passed, or the system cannot tell
// (see soleOpener); in the last two cases such a line stays possible.
func (s *Session) drainReplaced(old, dst Handle, carried *int64) error {
	deadline := time.Now().Add(drainWait)
	for {
		sole, supported := soleOpener(old)
		last := sole || !supported || time.Now().After(deadline)
		if last && !sole && supported {
			s.log.Debug("other processes still have the replaced file open; lines they write to it now are not copied", "file", s.path)
		}
		if err := s.carryOverFrom(old, dst, carried, last); err != nil {
			return err
		}
		if last {
			return nil
		}
		time.Sleep(time.Millisecond)
	}
}

// keepOwner gives the new file the old one's owner when it can (root
// rewriting a user's session must not hand it to root); a process that
// may not chown writes files it owns anyway.
func keepOwner(h Handle, old fs.FileInfo) {
	uid, gid, ok := fileOwner(old)
	c, can := h.(interface{ Chown(uid, gid int) error })
	if !ok || !can {
		return
	}
	if cur, err := h.Stat(); err == nil {
		if u, g, ok := fileOwner(cur); ok && u == uid && g == gid {
			return
		}
	}
	c.Chown(uid, gid)
}

// carryOver copies to dst the whole lines appended to the session file
// beyond *carried, until its size is stable.
func (s *Session) carryOver(dst Handle, carried *int64) error {
	return s.carryOverFrom(s.fd, dst, carried, false)
}

// carryOverFrom copies to dst what was appended to from beyond *carried,
// whole lines only, until from's size is stable. A line seen unfinished
// is most likely pi's write caught halfway, and once the new file has its
// name other writers append to it directly: copying half a line then
// could get another line in between the halves. With all, an unfinished
// end is copied too, as it is (the last copy, when nobody can finish it
// any more, or a crash left it).
func (s *Session) carryOverFrom(from, dst Handle, carried *int64, all bool) error {
	seen := int64(-1)
	for {
		st, err := from.Stat()
		if err != nil {
			return err
		}
		size := st.Size()
		if size < *carried {
			return fmt.Errorf("the file shrank from %d to %d bytes while it was rewritten", *carried, size)
		}
		if size == seen || size == *carried {
			break
		}
		seen = size
		buf := make([]byte, size-*carried)
		if _, err := from.ReadAt(buf, *carried); err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		if all {
			if _, err := dst.Write(buf); err != nil {
				return err
			}
			*carried = size
			continue
		}
		if n := bytes.LastIndexByte(buf, '\n') + 1; n > 0 {
			if _, err := dst.Write(buf[:n]); err != nil {
				return err
			}
			*carried += int64(n)
		}
	}
	return nil
}

// removeStaleTemps removes temp files that killed rewrites of this session
// left, and intent sidecars of sessions that are gone; every change
// through Update does it first. It runs under the
// session's exclusive lock, so no live rewrite owns them.
func (s *Session) removeStaleTemps() {
	names, err := s.fsys.ReadDir()
	if err != nil {
		return
	}
	prefix := tempPrefix(s.name)
	live := make(map[string]bool, len(names))
	for _, n := range names {
		live[intentName(n)] = true
	}
	for _, n := range names {
		if isTempOf(n, prefix) {
			if err := s.fsys.Remove(n); err == nil {
				s.log.Info("removed a temp file a killed rewrite left", "file", n)
			}
			continue
		}
		s.removeOrphanIntent(n, live)
	}
}
