package files

import (
	"fmt"
	"io/fs"
)

// overwritten reports, with a warning, whether the file (held is its stat
// under the lock) was overwritten in place since this Session read it: it
// no longer has the bytes this Session read before size (edge.go).
func (s *Session) overwritten(held fs.FileInfo) (bool, error) {
	same, err := s.edgeHolds(held)
	if err != nil || same {
		return false, err
	}
	s.log.Warn("the session file was overwritten in place since it was read; reading it again", "file", s.path)
	return true, nil
}

// Behind reports whether the file holds more than this Session has read:
// lines another process (pi, a pith command) appended since, or a last line
// not finished yet — unless Refresh has seen the file at this size already
// (an unfinished line left there, by a crash say, would otherwise keep a
// reader refreshing on every call). One fstat; no lock.
func (s *Session) Behind() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fd == nil {
		// Closed: nothing more to read. (The daemon's follower asks
		// without the session's lock, and can race its closing.)
		return false
	}
	st, err := s.fd.Stat()
	return err != nil || st.Size() != s.size && st.Size() != s.refreshed || st.Size() == s.size && changeStamp(st) != s.stamp
}

// Refresh reads what other processes appended since this Session last read
// the file, as a write does before it writes, and reports whether that
// moved the Session on: new entries, and the leaf on the last of them, where
// a fresh load of the file puts it. It is for a process that keeps a
// session open between its own writes (pith serve), so that its reads
// show what pi or a pith command appended meanwhile. A file renamed over
// the name is not followed (the caller opens the new one); a file
// overwritten in place is read again.
//
// It takes the file's lock shared: a Pith writer holds it exclusively
// until its lines are final (cut back on a failure), so none of its lines
// is read half-done. A line pi is still writing is left for later.
func (s *Session) Refresh() (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, err := s.fd.Stat()
	if err != nil {
		return false, fmt.Errorf("%s: %w", s.path, err)
	}
	if st.Size() == s.size && changeStamp(st) == s.stamp {
		return false, nil
	}
	if err := s.fd.Lock(false); err != nil {
		return false, fmt.Errorf("%s: lock: %w", s.path, err)
	}
	defer s.fd.Unlock()
	held, err := s.fd.Stat()
	if err != nil {
		return false, fmt.Errorf("%s: %w", s.path, err)
	}
	s.refreshed = held.Size()
	file, leaf := s.file, s.leaf
	n := len(file.Entries)
	over, err := s.overwritten(held)
	switch {
	case err != nil:
		return false, err
	case over:
		s.rewrites++
		err = s.loadLocked()
	default:
		err = s.catchUp(held)
	}
	if err != nil {
		return false, err
	}
	return s.file != file || len(s.file.Entries) != n || s.leaf != leaf, nil
}

// Rewrites counts the times this Session read its file whole again because
// another program had overwritten it in place (Refresh, or a write that
// found it so): a reader that follows it learns that entries it had read
// may have changed, not only that new ones came.
func (s *Session) Rewrites() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rewrites
}
