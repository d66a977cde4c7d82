package session

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"unsafe"

	"github.com/pith-dev/pith/internal/mapfile"
	"github.com/tidwall/gjson"
)

// ErrNotSession is returned for a file whose first line is not a session
// header with a string id.
var ErrNotSession = errors.New("not a pi session file")

// Warning reports a line that was skipped while reading, or (with Problem
// set) a line that was read but is wrong in a way readers work around.
// LogWarnings is how every part of Pith shows one.
type Warning struct {
	Line   int // 1-based
	Reason string
	// Problem names what is wrong with a line that was kept, such as a
	// parentId cycle; "" means the line was skipped.
	Problem string
}

func (w Warning) String() string { return fmt.Sprintf("line %d: %s", w.Line, w.Reason) }

// File is a parsed session file. Entries keep file order. Skipped lines are
// kept too (in Skipped, by line) so a rewrite does not drop them.
type File struct {
	Header   Header
	Entries  []*Entry
	Warnings []Warning
	// Skipped holds the raw bytes of malformed lines keyed by line number,
	// so that rewriting the file (prune, migrate) never loses them.
	Skipped map[int][]byte
	// Migrated is true when the file was v1 or v2 and was upgraded in memory.
	Migrated bool
	// TornTail is true when the last line had no newline (a crash mid-write).
	TornTail bool
}

// parallelThreshold is the size above which parsing is split across cores;
// below it the goroutine hand-off costs more than it saves.
const parallelThreshold = 4 << 20

// Parse reads a whole session file held in data. data is retained: entries'
// Raw fields and string fields point into it, so the caller must not modify
// it afterwards. Malformed lines are skipped with a Warning; a file whose
// first non-empty line is not a session header gives ErrNotSession.
func Parse(data []byte) (*File, error) { return ParseWith(data, ParseOptions{}) }

// ParseOptions are what a parse takes in beyond the entries themselves.
type ParseOptions struct {
	// Estimates measures every message entry's estimate while its line is
	// scanned (Entry.MessageTokens then costs nothing): for a reader that
	// will estimate most of the messages, as preparing a compaction does
	// (calibration sums the range). Without it each is measured on first
	// use, which is cheaper for a reader that estimates few (a context).
	Estimates bool
}

// ParseWith is Parse with options. data may be a mapping of the file
// (LoadOptions.Mapped): a file cut shorter in place under the parse is
// mapfile.ErrCut, not a crash.
func ParseWith(data []byte, opt ParseOptions) (f *File, err error) {
	err = mapfile.Guard(func() error {
		var perr error
		f, perr = parseWith(data, opt)
		return perr
	})
	if err != nil {
		return nil, err
	}
	return f, nil
}

func parseWith(data []byte, opt ParseOptions) (*File, error) {
	f := &File{}
	// Header: the first non-empty line.
	line := 0
	rest := data
	for len(rest) > 0 {
		l, r := nextLine(rest)
		rest = r
		line++
		if len(bytes.TrimSpace(l)) == 0 {
			continue
		}
		h, err := parseHeader(l)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		f.Header = h
		break
	}
	if f.Header.Raw == nil {
		return nil, fmt.Errorf("%w: the file is empty", ErrNotSession)
	}
	f.TornTail = len(data) > 0 && data[len(data)-1] != '\n'
	chunks := splitChunks(rest, line, opt.Estimates)
	results := make([]chunkResult, len(chunks))
	if len(chunks) == 1 {
		results[0] = parseChunk(chunks[0])
	} else {
		var wg sync.WaitGroup
		for i := range chunks {
			wg.Go(func() {
				// A goroutine of its own: the fault guard is per goroutine.
				results[i].err = mapfile.Guard(func() error { results[i] = parseChunk(chunks[i]); return nil })
			})
		}
		wg.Wait()
		for _, r := range results {
			if r.err != nil {
				return nil, r.err
			}
		}
	}
	n := 0
	for _, r := range results {
		n += len(r.entries)
	}
	f.Entries = make([]*Entry, 0, n)
	// Each piece numbered its lines from the one before it; only the
	// first knew where it starts. Counting the others' lines up front
	// would be one more pass over the bytes.
	offset := 0
	for _, r := range results {
		if offset != 0 {
			r.renumber(offset)
		}
		offset += r.lines
		f.Entries = append(f.Entries, r.entries...)
		f.Warnings = append(f.Warnings, r.warnings...)
		for k, v := range r.skipped {
			if f.Skipped == nil {
				f.Skipped = map[int][]byte{}
			}
			f.Skipped[k] = v
		}
	}
	if f.Header.Version < CurrentVersion {
		f.Migrated = migrate(f)
	}
	return f, nil
}

type chunk struct {
	data      []byte
	firstLine int // line number of the line before data's first line
	estimates bool
}

type chunkResult struct {
	entries  []*Entry
	warnings []Warning
	skipped  map[int][]byte
	// lines is how many lines the piece has, the one before it
	// included for the first piece (its firstLine).
	lines int
	// err is a fault reading the piece's bytes (mapfile.ErrCut).
	err error
}

// renumber moves the line numbers of a piece's results by offset.
func (r *chunkResult) renumber(offset int) {
	for _, e := range r.entries {
		e.Line += offset
	}
	for i := range r.warnings {
		r.warnings[i].Line += offset
	}
	if r.skipped != nil {
		moved := make(map[int][]byte, len(r.skipped))
		for k, v := range r.skipped {
			moved[k+offset] = v
		}
		r.skipped = moved
	}
}

// splitChunks cuts data at line boundaries into one piece per core. The
// first piece starts after linesBefore lines; the others number their
// lines from 0, and Parse moves them once every piece has counted its own.
func splitChunks(data []byte, linesBefore int, estimates bool) []chunk {
	parts := 1
	if len(data) >= parallelThreshold {
		parts = runtime.GOMAXPROCS(0)
	}
	if parts <= 1 {
		return []chunk{{data, linesBefore, estimates}}
	}
	out := make([]chunk, 0, parts)
	size := len(data) / parts
	start := 0
	line := linesBefore
	for i := 0; i < parts && start < len(data); i++ {
		end := len(data)
		if i < parts-1 {
			end = start + size
			if end < len(data) {
				nl := bytes.IndexByte(data[end:], '\n')
				if nl < 0 {
					end = len(data)
				} else {
					end += nl + 1
				}
			}
		}
		out = append(out, chunk{data[start:end], line, estimates})
		line = 0
		start = end
	}
	return out
}

func parseChunk(c chunk) chunkResult {
	var res chunkResult
	// A rough guess of the entry count avoids most slice growth.
	res.entries = make([]*Entry, 0, len(c.data)/512+1)
	block := make([]Entry, 0, 256)
	line := c.firstLine
	rest := c.data
	for len(rest) > 0 {
		var l []byte
		l, rest = nextLine(rest)
		line++
		if len(bytes.TrimSpace(l)) == 0 {
			continue
		}
		if len(block) == cap(block) {
			block = make([]Entry, 0, 256)
		}
		block = append(block, Entry{})
		e := &block[len(block)-1]
		if reason := scanLine(l, e, c.estimates); reason != "" {
			block = block[:len(block)-1]
			res.warnings = append(res.warnings, Warning{Line: line, Reason: reason})
			if res.skipped == nil {
				res.skipped = map[int][]byte{}
			}
			res.skipped[line] = l
			continue
		}
		e.Line = line
		res.entries = append(res.entries, e)
	}
	res.lines = line
	return res
}

// nextLine splits off the first line, without its "\n" (a "\r" before it
// stays part of the line, as pi keeps it).
func nextLine(data []byte) (line, rest []byte) {
	i := bytes.IndexByte(data, '\n')
	if i < 0 {
		line, rest = data, nil
	} else {
		line, rest = data[:i], data[i+1:]
	}
	return line, rest
}

// ViewEnd is how much of data — bytes of a session file from a line
// start to its end — a reader takes in: every line up to the last
// newline, and an unfinished last line too when it already is a whole
// entry. pi reads such a line (a file whose editor dropped the final
// newline, a writer caught just before it), and no byte can be added to
// it that keeps it an entry, so nothing read now is read differently
// later: at most a newline follows, an empty line. Any other unfinished
// line is a piece of a write in progress or cut short, left for the next
// read (or the crash recovery) to take whole.
func ViewEnd(data []byte) int {
	complete := bytes.LastIndexByte(data, '\n') + 1
	if tail := data[complete:]; len(bytes.TrimSpace(tail)) > 0 {
		if e := (Entry{}); parseEntry(tail, &e) == "" {
			return len(data)
		}
	}
	return complete
}

// ParseEntry reads one entry line. It reports why a line is not an entry.
func ParseEntry(line []byte) (*Entry, error) {
	e := &Entry{}
	if reason := parseEntry(line, e); reason != "" {
		return nil, errors.New(reason)
	}
	return e, nil
}

// parseEntry fills e from a line and returns "" or the reason it is not a
// valid entry. Only the envelope and the message's role, provider and model
// are read; the rest stays raw.
func parseEntry(l []byte, e *Entry) string { return scanEntry(l, e) }

func parseHeader(l []byte) (Header, error) {
	if err := ValidJSON(l); err != nil {
		return Header{}, fmt.Errorf("%w: the first line is not valid JSON (%v)", ErrNotSession, err)
	}
	r := gjson.Parse(unsafeString(l))
	if r.Get("type").String() != TypeSession {
		return Header{}, fmt.Errorf("%w: the first line is not a \"session\" header", ErrNotSession)
	}
	id := r.Get("id")
	if id.Type != gjson.String {
		return Header{}, fmt.Errorf("%w: the header has no string \"id\"", ErrNotSession)
	}
	h := Header{
		ID:            id.Str,
		Version:       1,
		Timestamp:     r.Get("timestamp").String(),
		Cwd:           r.Get("cwd").String(),
		ParentSession: r.Get("parentSession").String(),
		Raw:           l,
	}
	if v := r.Get("version"); v.Type == gjson.Number {
		h.Version = int(v.Int())
	}
	return h, nil
}

// unsafeString views b as a string without copying. The session buffer is
// never written after parsing, so strings taken from it stay valid.
func unsafeString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}
