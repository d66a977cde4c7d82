package viewer

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"sync"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/internal/regularfile"
	"github.com/pith-dev/pith/store"
)

// A Tail reads a session's lines after the first after lines (each with
// its newline, a torn last one without) and tells the count of lines now,
// as store.Store's Tail does. It is how the viewer reads a session: whole
// (after 0) when it opens it or the session was rewritten, and only what
// was appended otherwise.
type Tail func(after int) (data []byte, lines int, err error)

// reading is what the handler knows of its last reading: how many
// complete lines it took and the last of them, so the next reading can
// take only the lines that follow and check that they follow the same
// session (a rewrite ending in another line is read whole).
type reading struct {
	file  *session.File
	lines int
	last  []byte // the last complete line, without its newline
	size  int64  // the bytes of its complete lines: what the viewer holds
}

// readWhole reads and parses the whole session.
func readWhole(tail Tail) (reading, error) {
	data, _, err := tail(0)
	if err != nil {
		return reading{}, err
	}
	complete := bytes.LastIndexByte(data, '\n') + 1
	if complete == 0 {
		complete = len(data) // not even the header is finished
	}
	f, err := session.Parse(data[:complete])
	if err != nil {
		return reading{}, err
	}
	f.TornTail = complete < len(data)
	r := reading{file: f, lines: bytes.Count(data[:complete], []byte("\n")), size: int64(complete)}
	r.last = lastLine(data[:complete])
	return r, nil
}

// lastLine is a clone of the last complete line of data, without its
// newline; nil when data has none.
func lastLine(data []byte) []byte {
	if len(data) == 0 || data[len(data)-1] != '\n' {
		return nil
	}
	body := data[:len(data)-1]
	return bytes.Clone(body[bytes.LastIndexByte(body, '\n')+1:])
}

// readAppended takes the lines appended after prev. It reads from prev's
// last line on, so it can check that they still follow it; ok is false
// when they do not (the session was rewritten or cut: read it whole).
// changed is false when nothing complete was added.
func readAppended(tail Tail, prev reading) (next reading, changed, ok bool, err error) {
	if prev.lines == 0 || prev.last == nil || prev.file == nil || prev.file.Migrated {
		return reading{}, false, false, nil
	}
	data, n, err := tail(prev.lines - 1)
	if err != nil {
		return reading{}, false, false, err
	}
	if n < prev.lines {
		return reading{}, false, false, nil
	}
	// The same check as a stored session's catch-up: the lines after
	// the count are new only when the last line read is still there.
	rest, ok := store.AfterLast(data, prev.last)
	if !ok {
		return reading{}, false, false, nil
	}
	complete := bytes.LastIndexByte(rest, '\n') + 1
	torn := complete < len(rest)
	if complete == 0 && torn == prev.file.TornTail {
		return prev, false, true, nil
	}
	// A new File sharing the old one's entries: the old snapshot keeps
	// its own length of the slices, and Clip makes every append copy.
	f := *prev.file
	f.Entries = slices.Clip(prev.file.Entries)
	f.Warnings = slices.Clip(prev.file.Warnings)
	f.TornTail = torn
	line := prev.lines
	lines := rest[:complete]
	for len(lines) > 0 {
		i := bytes.IndexByte(lines, '\n')
		l := lines[:i]
		lines = lines[i+1:]
		line++
		if len(bytes.TrimSpace(l)) == 0 {
			continue
		}
		e, perr := session.ParseEntry(l)
		if perr != nil {
			f.Warnings = append(f.Warnings, session.Warning{Line: line, Reason: perr.Error()})
			continue
		}
		e.Line = line
		f.Entries = append(f.Entries, e)
	}
	next = reading{file: &f, lines: line, last: prev.last, size: prev.size + int64(complete)}
	if complete > 0 {
		next.last = lastLine(rest[:complete])
	}
	return next, true, true, nil
}

// OpenRegular opens path for FileTail: only a regular file, followed
// through symlinks (the user named it), opened without blocking (a FIFO
// put in the session's place would hang the open) and judged on the
// opened file, so a swap after the check by name is refused too.
func OpenRegular(path string) (*os.File, error) { return openRegular(path, os.Stat) }

// openRegular is OpenRegular with the check by name given: the seam a
// test swaps the file through between that check and the open.
func openRegular(path string, stat func(string) (fs.FileInfo, error)) (*os.File, error) {
	return regularfile.Open(path, os.O_RDONLY, 0, stat, os.OpenFile)
}

// ErrTooLarge refuses a session over the size a FileTail was given.
var ErrTooLarge = errors.New("the session is too large for the viewer")

// FileTail is a Tail over the file open opens (a path, or a name under a
// confined root), which must not block on a FIFO: OpenRegular, or the
// same mechanism under a root; anything but a regular file is refused. It remembers where the complete lines of its last read
// ended and the bytes before, so reading an append costs only the bytes
// added; another file under the name (a rename over it), or the same
// file with other bytes there, is read from its start. A file over
// limit() bytes is refused with ErrTooLarge (limit nil: no limit; asked
// on every reading, so a configuration reload applies at once).
func FileTail(open func() (*os.File, error), limit func() int64) Tail {
	t := &fileTail{open: open, limit: limit}
	return t.tail
}

type fileTail struct {
	open  func() (*os.File, error)
	limit func() int64

	mu    sync.Mutex
	info  os.FileInfo // the file the mark is in; nil: no mark
	lines int         // complete lines before off
	off   int64
	end   []byte // up to 64 bytes before off
}

func (t *fileTail) tail(after int) ([]byte, int, error) {
	f, err := t.open()
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	// open is the caller's: whatever it opened, only a regular file is
	// read (the same rule as OpenRegular's).
	if err := regularfile.Check(st.Name(), st); err != nil {
		return nil, 0, err
	}
	if t.limit != nil {
		if limit := t.limit(); st.Size() > limit {
			return nil, 0, fmt.Errorf("%w (%d bytes, over %d)", ErrTooLarge, st.Size(), limit)
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	var fromLines int
	var fromOff int64
	var fromEnd []byte
	if t.info != nil && os.SameFile(t.info, st) && t.off <= st.Size() && t.lines <= after && t.still(f) {
		fromLines, fromOff, fromEnd = t.lines, t.off, t.end
	}
	data := make([]byte, st.Size()-fromOff)
	if _, err := io.ReadFull(io.NewSectionReader(f, fromOff, int64(len(data))), data); err != nil {
		return nil, 0, err
	}
	out, n := store.TailOf(data, after-fromLines)
	// The mark goes before the last complete line, not after it: the
	// viewer reads from that line on, to check the session still ends
	// where its last reading did.
	t.info, t.lines, t.off, t.end = st, fromLines, fromOff, fromEnd
	if complete := bytes.LastIndexByte(data, '\n') + 1; complete > 0 {
		last := bytes.LastIndexByte(data[:complete-1], '\n') + 1
		end := append(bytes.Clone(fromEnd), data[:last]...)
		t.lines, t.off, t.end = fromLines+bytes.Count(data[:last], []byte("\n")), fromOff+int64(last), end[max(0, len(end)-64):]
	}
	return out, fromLines + n, nil
}

// still reports whether f has the mark's bytes before its offset: a file
// rewritten in place is read from its start.
func (t *fileTail) still(f *os.File) bool {
	if len(t.end) == 0 {
		return t.off == 0
	}
	buf := make([]byte, len(t.end))
	if _, err := f.ReadAt(buf, t.off-int64(len(buf))); err != nil {
		return false
	}
	return bytes.Equal(buf, t.end)
}
