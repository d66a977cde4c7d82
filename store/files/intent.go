package files

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/internal/regularfile"
)

// The append intent. Linux copies a buffered write() page by page and
// stops at a pending fatal signal, so a kill -9 can cut an append of a
// line longer than a page short, leaving a partial last line; no
// user-space trick makes such a write atomic. So a Session records, before
// each append, where it writes and how much — {inode, offset, length} in
// the hidden sidecar ".NAME.append", by pwrite on a descriptor it keeps
// open — and clears the record when the append was cut back (a record
// of a whole write is harmless and stays until the next writer). Whoever takes the file's lock
// to write next reads the record first (recoverTornAppend) and cuts a
// torn piece back off. An append of several lines also records its bytes
// after the record, so that a piece of it that ends after a whole line is
// told apart from a line another writer appended. There is no fsync: the record only has to survive
// the death of the process, whose writes stay in the page cache, not a
// power cut.
//
// The sidecar's lifecycle: it is created by a Session's first append (or
// first look for a record) and kept while the session is appended to —
// truncating or removing it after every append would cost a write or a
// directory change per append, and a record of a whole write is harmless.
// Every rewrite (prune, restore, migrate, the daemon's rewrites) removes
// it once the new file is in place, since its record can only name the
// replaced file; a Session that kept it open finds the file replaced under
// the lock before its next write and opens the sidecar afresh. A sidecar
// whose session file is gone is removed by the next rewrite of any
// session in the directory.

// intentSize is the size of a record: a magic, then inode, offset and
// length as little-endian uint64. A cleared record is all zeros.
const intentSize = 32

var intentMagic = [8]byte{'p', 'i', 't', 'h', 'a', 'p', 'n', 'd'}

// intentMagicLines starts the record of an append of several lines, whose
// bytes follow the record in the sidecar: a kill can leave such an append
// with its first lines whole and the next one cut (a compaction without
// the message that belongs to it), and only the bytes themselves tell
// that piece from a line another writer appended after a whole one.
var intentMagicLines = [8]byte{'p', 'i', 't', 'h', 'a', 'p', 'n', 'l'}

// intentName is the sidecar holding the append intent of session name
// (a long name's is cut and hashed: SideName).
func intentName(name string) string { return session.SideName(".", name, ".append") }

// intentOf is the session name whose intent sidecar n is.
func intentOf(n string) (string, bool) {
	name, ok := strings.CutSuffix(n, ".append")
	if !ok || !strings.HasPrefix(name, ".") || len(name) < 2 {
		return "", false
	}
	return name[1:], true
}

// dropIntent closes this Session's handle of the intent sidecar, so the next
// write opens it by name again.
func (s *Session) dropIntent() {
	if s.intent != nil {
		s.intent.Close()
		s.intent = nil
	}
	s.lastIntent = appendIntent{}
}

// removeStaleIntent removes the session's intent sidecar after a rewrite
// put a new file in place, under the new file's lock: a record in it names
// the replaced file, and every Session that opened the sidecar before finds
// the replacement under the lock and drops its handle (lockFresh).
func (s *Session) removeStaleIntent() {
	s.dropIntent()
	if s.noIntent {
		return
	}
	if err := s.fsys.Remove(intentName(s.name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		s.log.Debug("could not remove the append intent sidecar", "file", intentName(s.name), "err", err)
	}
}

// removeOrphanIntent removes n if it is the intent sidecar of a session
// that is gone (deleted or renamed). Another session's sidecar is never
// touched while its file exists: its Session may hold it open. live holds
// the sidecar names of the sessions listed with n: the sidecar of a long
// name is cut and hashed, so the name intentOf reads from it is no
// session's, and only the listing tells whose it is (a sidecar is made
// after its session, so one listed has its session listed too unless
// the session is gone).
func (s *Session) removeOrphanIntent(n string, live map[string]bool) {
	name, ok := intentOf(n)
	if !ok || name == s.name || live[n] {
		return
	}
	if _, err := s.fsys.Lstat(name); !errors.Is(err, fs.ErrNotExist) {
		return
	}
	if st, err := s.fsys.Lstat(n); err != nil || !st.Mode().IsRegular() || !isIntentFile(s.fsys, n, st.Size()) {
		return // not one of ours
	}
	if err := s.fsys.Remove(n); err == nil {
		s.log.Info("removed the append intent sidecar of a session that is gone", "file", n)
	}
}

// isIntentFile reports whether the file n, of size bytes, holds what an
// intent sidecar can: nothing (created, never written), or a record —
// cleared (zeros) or not — with, after an append of several lines, the
// bytes of one. A file of the user's that merely has such a name is not
// removed.
func isIntentFile(fsys FS, n string, size int64) bool {
	if size == 0 {
		return true
	}
	if size < intentSize {
		return false
	}
	h, err := openRegular(fsys, n, os.O_RDONLY)
	if err != nil {
		return false
	}
	defer h.Close()
	var buf [intentSize]byte
	if k, err := h.ReadAt(buf[:], 0); k != intentSize || err != nil && !errors.Is(err, io.EOF) {
		return false
	}
	magic := [8]byte(buf[:8])
	return magic == intentMagic || magic == intentMagicLines || buf == [intentSize]byte{}
}

// appendIntent is an append in progress: length bytes at offset at of the
// file with inode ino.
type appendIntent struct {
	ino      uint64
	at, size int64
	// lines: the appended bytes follow the record (intentMagicLines).
	lines bool
}

func (a appendIntent) encode() []byte {
	var b [intentSize]byte
	a.encodeTo(&b)
	return b[:]
}

// encodeTo lays out the record in b, which the Session keeps, so that an
// append allocates nothing for it.
func (a appendIntent) encodeTo(b *[intentSize]byte) {
	copy(b[:], intentMagic[:])
	if a.lines {
		copy(b[:], intentMagicLines[:])
	}
	binary.LittleEndian.PutUint64(b[8:], a.ino)
	binary.LittleEndian.PutUint64(b[16:], uint64(a.at))
	binary.LittleEndian.PutUint64(b[24:], uint64(a.size))
}

// decodeIntent reads a record; ok is false for a cleared, short or foreign one.
func decodeIntent(b []byte) (a appendIntent, ok bool) {
	if len(b) < intentSize {
		return a, false
	}
	switch [8]byte(b[:8]) {
	case intentMagic:
	case intentMagicLines:
		a.lines = true
	default:
		return a, false
	}
	a.ino = binary.LittleEndian.Uint64(b[8:])
	a.at = int64(binary.LittleEndian.Uint64(b[16:]))
	a.size = int64(binary.LittleEndian.Uint64(b[24:]))
	return a, a.at >= 0 && a.size > 0
}

// intentHandle opens the intent sidecar once per Session. nil without error
// means appends go unprotected: the system has no inode numbers, the
// directory may not be written (a writable session in a read-only
// directory stays writable, as before), or the file system takes names
// shorter than NameMax (the sidecar of a long name is cut to NameMax).
func (s *Session) intentHandle() (Handle, error) {
	if s.intent != nil || s.noIntent {
		return s.intent, nil
	}
	// Never through a link in its place: records are written at offset
	// 0, over the start of whatever the link leads to.
	h, _, err := regularfile.OpenOrCreate(intentName(s.name), os.O_RDWR, 0o644, s.fsys.Lstat, s.fsys.OpenFile)
	if errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS) || errors.Is(err, syscall.ENAMETOOLONG) {
		s.noIntent = true
		return nil, nil
	}
	if errors.Is(err, ErrNotRegular) {
		return nil, fmt.Errorf("%s: %s is not a regular file", s.path, s.intentLabel())
	}
	if errors.Is(err, regularfile.ErrLinked) {
		// Its records would be written over whatever file shares it.
		return nil, fmt.Errorf("%s: %s has other hard links; remove it while nothing writes the session (it holds only the record of the last append)", s.path, s.intentLabel())
	}
	if err != nil {
		return nil, fmt.Errorf("%s: open %s: %w", s.path, s.intentLabel(), unwrapPathError(err))
	}
	s.intent = h
	return h, nil
}

// recordIntent notes that data is about to be appended at offset at of
// the file whose stat is held; an append of several lines records its
// bytes too.
func (s *Session) recordIntent(held fs.FileInfo, at int64, data []byte) error {
	ino, ok := fileInode(held)
	if !ok {
		return nil
	}
	h, err := s.intentHandle()
	if err != nil || h == nil {
		return err
	}
	a := appendIntent{ino: ino, at: at, size: int64(len(data)), lines: bytes.Count(data, []byte{'\n'}) > 1}
	a.encodeTo(&s.intentBuf)
	rec := s.intentBuf[:]
	if a.lines {
		rec = append(bytes.Clone(rec), data...)
	}
	if _, err := h.WriteAt(rec, 0); err != nil {
		return fmt.Errorf("%s: record the append intent: %w", s.path, err)
	}
	return nil
}

// finishIntent notes that the append recorded last went through whole.
// Its record stays: one that names a whole write is harmless, and the
// next writer clears it (or, being this Session, knows it by lastIntent).
func (s *Session) finishIntent() {
	if a, ok := decodeIntent(s.intentBuf[:]); ok {
		s.lastIntent = a
	}
}

// clearIntent marks the last append undone (cut back) or a record dealt
// with. A failure leaves a record the next writer finds harmless: it
// names a whole write, or a file that was since replaced.
func (s *Session) clearIntent() {
	s.lastIntent = appendIntent{}
	if s.intent != nil {
		s.intentBuf = [intentSize]byte{}
		s.intent.WriteAt(s.intentBuf[:], 0)
	}
}

// recoverTornAppend undoes an append a crash cut short: the caller holds
// the exclusive lock on s.fd, whose stat is held; replaced says s.fd was
// just reopened. It reports whether it cut the file back (the caller
// rereads it then).
//
// A record naming this file whose write is not all there — the file ends
// inside it, and no newline follows its start: a torn piece with nothing
// after it — is cut back to where the write began, so the file is as it
// was before that append. If a line ends after the start — pi appended
// after the crash and its line is glued to the piece, or the piece is of
// an append of several lines — the file is left alone (the next append
// fences it) and a warning says so. A record of another file (a rewrite
// replaced it since) or of a whole write is dropped.
func (s *Session) recoverTornAppend(held fs.FileInfo, replaced bool) (undone bool, err error) {
	if s.lastIntent != (appendIntent{}) && !replaced && held.Size() == s.size && !s.file.TornTail {
		// This Session's last append went through, and the file still ends
		// where it read it, after a newline: nobody appended since, so
		// the record is that append's (or one another writer cleared or
		// left of a write that never reached the file). This keeps the
		// intent out of a busy Session's way: only the record's write is
		// added to its appends.
		return false, nil
	}
	ino, ok := fileInode(held)
	if !ok || s.readOnly {
		return false, nil
	}
	h, err := s.intentHandle()
	if err != nil || h == nil {
		return false, err
	}
	buf := s.intentBuf[:]
	clear(buf)
	if _, err := h.ReadAt(buf, 0); err != nil && !errors.Is(err, io.EOF) {
		return false, fmt.Errorf("%s: read the append intent: %w", s.path, err)
	}
	a, ok := decodeIntent(buf)
	if !ok || a == s.lastIntent {
		// Nothing, or this Session's own last append, which it saw finish:
		// an append leaves its record in place when it succeeds, saving
		// a write per append.
		return false, nil
	}
	defer func() {
		if err == nil {
			s.clearIntent()
		}
	}()
	size, end := held.Size(), a.at+a.size
	if a.ino != ino || size <= a.at {
		return false, nil // another file since, or nothing of it landed
	}
	if size >= end && s.byteAt(end-1) == '\n' {
		// The write is whole; the crash came after it. The file only
		// grows from here, so such a record never matches a piece.
		return false, nil
	}
	tail := make([]byte, size-a.at)
	if _, err := s.fd.ReadAt(tail, a.at); err != nil {
		return false, fmt.Errorf("%s: read: %w", s.path, err)
	}
	line, err := countLines(s.fd, a.at)
	if err != nil {
		return false, fmt.Errorf("%s: read: %w", s.path, err)
	}
	// A piece with no newline is this append's alone (a line another
	// writer added would end in one); a piece of several lines is when it
	// is exactly the start of what the record says was written.
	if size < end && (bytes.IndexByte(tail, '\n') < 0 || a.lines && ownPiece(h, tail)) {
		if err := s.fd.Truncate(a.at); err != nil {
			return false, fmt.Errorf("%s: undo a write a crash interrupted: %w", s.path, err)
		}
		if err := s.fd.Sync(); err != nil {
			return true, fmt.Errorf("%s: undo a write a crash interrupted: %w", s.path, err)
		}
		session.LogWarnings(s.log, s.path, []session.Warning{{Line: line, Problem: "an append interrupted by a crash",
			Reason: fmt.Sprintf("undone: the %d bytes of it that reached the file were cut off", size-a.at)}})
		return true, nil
	}
	session.LogWarnings(s.log, s.path, []session.Warning{{Line: line, Problem: "an append interrupted by a crash",
		Reason: "left in place: a line ends after the piece of it (another writer's line glued to it)"}})
	return false, nil
}

// ownPiece reports whether tail is the start of the bytes an append of
// several lines recorded after its record in the sidecar h.
func ownPiece(h Handle, tail []byte) bool {
	rec := make([]byte, len(tail))
	if n, err := h.ReadAt(rec, intentSize); n != len(rec) || err != nil && !errors.Is(err, io.EOF) {
		return false
	}
	return bytes.Equal(rec, tail)
}

// byteAt is the byte at offset off of the locked file (0 when unreadable).
func (s *Session) byteAt(off int64) byte {
	var b [1]byte
	if _, err := s.fd.ReadAt(b[:], off); err != nil {
		return 0
	}
	return b[0]
}

// countLines is the number of the line that starts at offset end of h
// (1 + the newlines before it); only on the rare recovery path.
func countLines(h Handle, end int64) (int, error) {
	buf := make([]byte, 1<<20)
	line := 1
	for off := int64(0); off < end; {
		n := min(int64(len(buf)), end-off)
		got, err := h.ReadAt(buf[:n], off)
		for _, c := range buf[:got] {
			if c == '\n' {
				line++
			}
		}
		off += int64(got)
		if err != nil && !(errors.Is(err, io.EOF) && off >= end) {
			if errors.Is(err, io.EOF) {
				break
			}
			return 0, err
		}
		if got == 0 {
			break
		}
	}
	return line, nil
}

// intentLabel names the intent sidecar in a message: with its file name,
// unless the Session's file goes unnamed (Options.Display).
func (s *Session) intentLabel() string {
	if s.hideName {
		return "its append intent sidecar"
	}
	return "the append intent sidecar " + intentName(s.name)
}
