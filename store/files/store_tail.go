package files

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/pith-dev/pith/store"
)

// Tail returns what follows line after. It remembers, per session, how
// many lines end before which offset of which file, so a reader catching
// up reads only the bytes appended since (a rename over the session, a
// rewrite, is another file: read whole).
func (f *Store) Tail(ctx context.Context, name string, after int) ([]byte, int, error) {
	return f.TailWithin(ctx, name, after, nil)
}

// TailWithin is Tail that asks admit with the file's size, stat'ed under
// the shared lock, before a byte is read; the read stops at that size.
func (f *Store) TailWithin(_ context.Context, name string, after int, admit func(size int64) error) ([]byte, int, error) {
	dir, base, err := f.dirOf(name, false)
	if err != nil {
		return nil, 0, err
	}
	defer dir.Close()
	h, err := openRegularIn(dir, base, dir.Stat)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, fmt.Errorf("%s: %w", name, store.ErrNotFound)
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
	if admit != nil {
		if err := admit(st.Size()); err != nil {
			return nil, 0, err
		}
	}
	var from tailMark
	f.mu.Lock()
	m, ok := f.marks[name]
	f.mu.Unlock()
	if ok && os.SameFile(m.file, st) && m.off <= st.Size() && m.still(h) {
		switch {
		case m.lines <= after:
			from = m
		case m.lines > 0 && m.lines-1 <= after && lineStartsAt(h, m.lastOff):
			// A reader that reads its last line again, to see that the
			// session was not rewritten (store.Session's catch-up), starts
			// at that line.
			from = tailMark{lines: m.lines - 1, off: m.lastOff}
		}
	}
	data, err := readRange(h, from.off, st.Size()-from.off)
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", name, err)
	}
	tail, n := store.TailOf(data, after-from.lines)
	complete := bytes.LastIndexByte(data, '\n') + 1
	f.mu.Lock()
	if f.marks == nil || len(f.marks) >= maxMarks {
		f.marks = map[string]tailMark{}
	}
	mark := tailMark{file: st, lines: from.lines + bytes.Count(data[:complete], []byte("\n")), off: from.off + int64(complete)}
	if k := min(complete, len(mark.end)); k > 0 {
		mark.endLen = copy(mark.end[:], data[complete-k:complete])
		mark.lastOff = from.off + int64(bytes.LastIndexByte(data[:complete-1], '\n')+1)
	} else {
		mark.end, mark.endLen, mark.lastOff = from.end, from.endLen, from.lastOff
	}
	f.marks[name] = mark
	f.mu.Unlock()
	return tail, from.lines + n, nil
}

// tailMark says lines complete lines of file end at offset off, the last
// of them starting at lastOff, and what the bytes before off were: a file
// that got the same inode after a rewrite freed it is told apart by them.
type tailMark struct {
	file    fs.FileInfo
	lines   int
	off     int64
	lastOff int64
	end     [64]byte
	endLen  int
}

// still reports whether h has the mark's bytes before its offset.
func (m tailMark) still(h Handle) bool {
	if m.endLen == 0 {
		return m.off == 0
	}
	buf := make([]byte, m.endLen)
	if _, err := h.ReadAt(buf, m.off-int64(m.endLen)); err != nil {
		return false
	}
	return bytes.Equal(buf, m.end[:m.endLen])
}

// lineStartsAt reports whether a line of h starts at off: the file's
// start, or just after a newline.
func lineStartsAt(h Handle, off int64) bool {
	if off == 0 {
		return true
	}
	var b [1]byte
	_, err := h.ReadAt(b[:], off-1)
	return err == nil && b[0] == '\n'
}

// maxMarks bounds the remembered tail positions.
const maxMarks = 4096
