package compaction

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/internal/checksum"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// ArchiveRecord is one line of a session's sidecar archive: the original
// line of an entry a pruning changed. Records are self-checking: Pos and ID
// say which entry (its index among the file's entries, which rewrites keep),
// SHA256 is the hash of Original, so a torn or forged record is found
// before anything is put back. Field names what was replaced; any pruning
// (tool outputs now, other blocks later) writes the same record.
type ArchiveRecord struct {
	Pos      int
	ID       string
	Field    string
	PrunedAt int64
	SHA256   string
	Original []byte
	// Legacy marks a record of the first format ({"id","prunedAt","entry"}),
	// which had no position and no hash.
	Legacy bool
}

// Marshal is the record's archive line, newline included; SHA256 is
// computed from Original.
func (r ArchiveRecord) Marshal() []byte {
	var b bytes.Buffer
	r.writeTo(&b)
	return b.Bytes()
}

// writeTo appends the record's line to b, growing b once for it.
func (r ArchiveRecord) writeTo(b *bytes.Buffer) {
	b.Grow(len(r.Original) + len(r.ID) + len(r.Field) + 160)
	b.WriteString(`{"pos":`)
	b.WriteString(strconv.Itoa(r.Pos))
	b.WriteString(`,"id":`)
	b.WriteString(strconv.Quote(r.ID))
	if r.Field != "" {
		b.WriteString(`,"field":`)
		b.WriteString(strconv.Quote(r.Field))
	}
	b.WriteString(`,"prunedAt":`)
	b.WriteString(strconv.FormatInt(r.PrunedAt, 10))
	b.WriteString(`,"sha256":"`)
	b.WriteString(checksum.Sum(r.Original))
	b.WriteString(`","entry":`)
	b.Write(r.Original)
	b.WriteString("}\n")
}

func (r ArchiveRecord) key() string { return strconv.Itoa(r.Pos) + "/" + r.SHA256 }

// ErrBadRecord is a record of the archive that fails its checks.
var ErrBadRecord = errors.New("bad archive record")

// ParseArchiveRecord reads and verifies one archive line.
func ParseArchiveRecord(line []byte) (ArchiveRecord, error) {
	if session.ValidJSON(line) != nil { // depth-limited, unlike gjson.Valid
		return ArchiveRecord{}, fmt.Errorf("%w: not valid JSON", ErrBadRecord)
	}
	v := gjson.ParseBytes(line)
	entry := v.Get("entry")
	r := ArchiveRecord{ID: v.Get("id").String(), Field: v.Get("field").String(), PrunedAt: v.Get("prunedAt").Int()}
	if !v.IsObject() || !entry.IsObject() || r.ID == "" {
		return ArchiveRecord{}, fmt.Errorf("%w: no id or no entry", ErrBadRecord)
	}
	r.Original = originalBytes(line, entry)
	if got := gjson.GetBytes(r.Original, "id").String(); got != r.ID {
		return ArchiveRecord{}, fmt.Errorf("%w: the record is for %q, its entry is %q", ErrBadRecord, r.ID, got)
	}
	sum, pos := v.Get("sha256"), v.Get("pos")
	if !sum.Exists() && !pos.Exists() {
		r.Legacy = true
		return r, nil
	}
	if pos.Type != gjson.Number || pos.Int() < 0 || float64(pos.Int()) != pos.Num {
		return ArchiveRecord{}, fmt.Errorf("%w: bad position %s", ErrBadRecord, pos.Raw)
	}
	r.Pos = int(pos.Int())
	r.SHA256 = checksum.Sum(r.Original)
	if checksum.Verify(r.Original, sum.String()) != nil {
		return ArchiveRecord{}, fmt.Errorf("%w: the SHA-256 of its original does not match (the record was changed or torn)", ErrBadRecord)
	}
	return r, nil
}

// originalBytes is the entry of a record line as writeTo wrote it. gjson
// leaves whitespace around a value out of its Raw, but an original may
// have some: the \r of a session with CRLF line ends, spaces before the
// object, which the record's hash covers. Whitespace between "entry": and
// the object is the original's, and so is whitespace after it when only
// the record's closing brace follows.
func originalBytes(line []byte, entry gjson.Result) []byte {
	start, end := entry.Index, entry.Index+len(entry.Raw)
	if start <= 0 || end > len(line) || string(line[start:end]) != entry.Raw {
		return []byte(entry.Raw)
	}
	lead := start
	for lead > 0 && isSpace(line[lead-1]) {
		lead--
	}
	if lead > 0 && line[lead-1] == ':' {
		start = lead
	}
	rest := bytes.TrimRight(line[end:], " \t\r\n")
	if len(rest) == 0 || rest[len(rest)-1] != '}' {
		return []byte(entry.Raw)
	}
	if ws := rest[:len(rest)-1]; len(bytes.Trim(ws, " \t\r\n")) == 0 {
		end += len(ws)
	}
	return bytes.Clone(line[start:end])
}

// isSpace is JSON's whitespace.
func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// RefusedRecord is a record Restore did not apply, and why.
type RefusedRecord struct {
	Line   int // 1-based line of the archive
	ID     string
	Reason string
}

func (r RefusedRecord) String() string {
	if r.ID == "" {
		return fmt.Sprintf("archive line %d: %s", r.Line, r.Reason)
	}
	return fmt.Sprintf("archive line %d (entry %s): %s", r.Line, r.ID, r.Reason)
}

// RestoreResult says what a restore did.
type RestoreResult struct {
	Restored int
	Refused  []RefusedRecord
	// NoArchive: the session has no archive (or an empty one), so it was
	// never pruned and there was nothing to look at.
	NoArchive bool
}

// prunedFrom checks that cur is the pruned form of the record's original:
// marked pruned, and equal to it but for the pruned field and the stamp.
// A record cannot put back anything else, however it was made.
func prunedFrom(cur []byte, r ArchiveRecord) string {
	if !gjson.GetBytes(cur, "message.prunedAt").Exists() {
		return fmt.Sprintf("the entry at position %d is not pruned", r.Pos)
	}
	field := r.Field
	if field == "" {
		field = "message.content"
	}
	strip := func(b []byte) []byte {
		b, _ = sjson.DeleteBytes(bytes.Clone(b), field)
		b, _ = sjson.DeleteBytes(b, "message.prunedAt")
		return b
	}
	if !bytes.Equal(strip(cur), strip(r.Original)) {
		return fmt.Sprintf("the entry at position %d differs from the record's original in more than %s", r.Pos, field)
	}
	return ""
}

// RestoreFile returns a copy of file with every entry a record of the
// archive names put back to its original line, byte for byte. A record is
// applied by position: the entry at Pos must have the record's id. The
// first verified record of a position is the true original (later ones can
// only come from pruning again). A torn last line is ignored (its prune
// never happened); every other record that fails its checks is refused and
// listed, and the others are still applied.
func RestoreFile(file *session.File, archive []byte) (*session.File, RestoreResult, error) {
	var res RestoreResult
	originals := map[int][]byte{}
	idPos := map[string]int{}
	for i, e := range file.Entries {
		if _, ok := idPos[e.ID]; ok {
			idPos[e.ID] = -1 // not unique: a legacy record cannot say which
		} else {
			idPos[e.ID] = i
		}
	}
	lines := bytes.Split(archive[:completeRecords(archive)], []byte("\n"))
	for n, l := range lines {
		if len(bytes.TrimSpace(l)) == 0 {
			continue
		}
		r, err := ParseArchiveRecord(l)
		if err != nil {
			res.Refused = append(res.Refused, RefusedRecord{Line: n + 1, ID: gjson.GetBytes(l, "id").String(), Reason: err.Error()})
			continue
		}
		if r.Legacy {
			p, ok := idPos[r.ID]
			if !ok || p < 0 {
				if p < 0 {
					res.Refused = append(res.Refused, RefusedRecord{Line: n + 1, ID: r.ID, Reason: "an old record without position, and the id is not unique in the session"})
				}
				continue
			}
			r.Pos = p
		}
		if r.Pos >= len(file.Entries) || file.Entries[r.Pos].ID != r.ID {
			res.Refused = append(res.Refused, RefusedRecord{Line: n + 1, ID: r.ID, Reason: fmt.Sprintf("the session has no entry %s at position %d", r.ID, r.Pos)})
			continue
		}
		if _, ok := originals[r.Pos]; ok {
			continue
		}
		if cur := file.Entries[r.Pos].Raw; !bytes.Equal(cur, r.Original) {
			if reason := prunedFrom(cur, r); reason != "" {
				res.Refused = append(res.Refused, RefusedRecord{Line: n + 1, ID: r.ID, Reason: reason})
				continue
			}
		}
		originals[r.Pos] = r.Original
	}
	if len(originals) == 0 {
		return file, res, nil
	}
	out := *file
	out.Entries = slices.Clone(file.Entries)
	for pos, orig := range originals {
		e := out.Entries[pos]
		if bytes.Equal(orig, e.Raw) {
			continue
		}
		ne, err := session.ParseEntry(orig)
		if err != nil {
			return nil, RestoreResult{}, fmt.Errorf("restore entry %s: %w", e.ID, err)
		}
		ne.Line = e.Line
		out.Entries[pos] = ne
		res.Restored++
	}
	return &out, res, nil
}

// Restore puts every pruned original of the archive back into the session,
// in one change under its lock (see RestoreFile). Nothing is written when
// nothing needs restoring.
func Restore(store session.Backend) (RestoreResult, error) {
	var res RestoreResult
	err := store.Update(func(tx *session.Tx) (*session.File, error) {
		arch, err := tx.ReadSidecar(ArchiveSuffix)
		if err != nil {
			return nil, err
		}
		if len(arch) == 0 {
			res.NoArchive = true
			return nil, nil
		}
		out, r, err := RestoreFile(tx.File(), arch)
		if err != nil {
			return nil, err
		}
		res = r
		if r.Restored == 0 {
			return nil, nil
		}
		return out, nil
	})
	if err != nil {
		return RestoreResult{}, err
	}
	return res, nil
}
