package files

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
)

// A file can change under a Session without being replaced: `cp other
// s.jsonl`, an editor's save or a restore from a backup truncate the
// session and write new content into the same file. Its size then says
// nothing — the new content is usually longer, so it looks like lines
// appended — and a Session that went on from the size it read would take
// the middle of the new content for new lines, and a rewrite would write
// the old content back over the new. Every writer, once it holds the
// lock, therefore checks that a file that grew still has, right before
// the size the Session read, the last bytes it read or wrote there
// (lockFresh); if not, it reads the file afresh. A file of the same size
// is checked the same way when its change time moved (see edgeHolds).

// edgeLen is how many of those bytes a Session keeps: enough that another
// session's bytes at the same offset match only by accident (they end
// in a line's id, timestamp and content), little enough to cost one
// small read per write.
const edgeLen = 64

// readEdge takes s.edge from the file, up to s.size.
func (s *Session) readEdge() error {
	n := min(int64(edgeLen), s.size)
	s.edge = make([]byte, n)
	if _, err := s.fd.ReadAt(s.edge, s.size-n); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("%s: read: %w", s.path, err)
	}
	return nil
}

// extendEdge notes that added now ends what the Session read.
func (s *Session) extendEdge(added []byte) {
	if len(added) >= edgeLen {
		s.edge = append(s.edge[:0], added[len(added)-edgeLen:]...)
		return
	}
	keep := max(0, len(s.edge)+len(added)-edgeLen)
	s.edge = append(s.edge[:0], s.edge[keep:]...)
	s.edge = append(s.edge, added...)
}

// edgeHolds reports whether the locked file, whose stat is held, still
// has s.edge right before s.size. A file shorter than s.size does not. A
// file of the size the Session left it, with the change time it had then,
// is taken as unchanged without a read: that is every write of a sole
// writer. Of the same size with another change time it was written to
// meanwhile — overwritten in place by content of exactly the same length,
// say. Otherwise its edge and header line are read. (Where the file
// system's clock is coarse, an overwrite within the same tick as the
// Session's last look still goes unnoticed.)
func (s *Session) edgeHolds(held fs.FileInfo) (bool, error) {
	switch {
	case held.Size() < s.size:
		return false, nil
	case held.Size() == s.size && changeStamp(held) == s.stamp:
		return true, nil
	}
	var buf [edgeLen]byte
	got := buf[:len(s.edge)]
	if _, err := s.fd.ReadAt(got, s.size-int64(len(got))); err != nil && !errors.Is(err, io.EOF) {
		return false, fmt.Errorf("%s: read: %w", s.path, err)
	}
	if !bytes.Equal(got, s.edge) {
		return false, nil
	}
	// The last line's end can be the same in another session — the same
	// closing text, even the same timestamp when a tool wrote both within
	// a millisecond — its header, the session's random id, cannot. One
	// more small read, only when the file changed since the last look.
	if same, err := s.headHolds(); err != nil || !same {
		return false, err
	}
	if held.Size() == s.size {
		s.stamp = changeStamp(held) // written, but the same: no read next time
	}
	return true, nil
}

// headHolds reports whether the file still starts with the header line
// this Session read.
func (s *Session) headHolds() (bool, error) {
	want := s.file.Header.Raw
	if len(want) == 0 || int64(len(want)) > s.size {
		return true, nil
	}
	got := make([]byte, len(want))
	if _, err := s.fd.ReadAt(got, 0); err != nil && !errors.Is(err, io.EOF) {
		return false, fmt.Errorf("%s: read: %w", s.path, err)
	}
	return bytes.Equal(got, want), nil
}
