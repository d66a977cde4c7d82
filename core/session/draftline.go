package session

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// BuildLine lays out d as the entry line a session file's Append writes, for
// stores that keep a session somewhere other than a file (a database) and
// must still produce exactly the bytes pi reads.
func BuildLine(d Draft, id, parent string, at time.Time) ([]byte, error) {
	return buildLine(d, id, parent, isoTime(at))
}

// NewEntryID reads an entry id (8 lowercase hex characters, as pi makes
// them) from r; the caller checks it is unused in its session.
func NewEntryID(r io.Reader) (string, error) {
	var b [4]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return "", fmt.Errorf("entry id: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// Draft is an entry to append. The writer fills type, id, parentId and
// timestamp; Fields (a struct, a map or json.RawMessage of an object) gives
// the rest.
type Draft struct {
	Type string
	// Parent is the parent id; nil means the current leaf, a pointer to ""
	// makes a root.
	Parent *string
	Fields any
	// OfPrevious, when set, makes the fields from the id of the draft
	// before it in the same append, which is known only once that is
	// written: a label on the branch summary appended with it, as pi
	// does. It is an error on the first draft.
	OfPrevious func(previousID string) any
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
	if len(fields) > 0 {
		if err := checkFields(fields); err != nil {
			return nil, err
		}
	}
	if bytes.ContainsAny(fields, "\r\n") {
		// A raw draft may be pretty-printed; a JSONL entry must stay one line.
		var c bytes.Buffer
		if err := json.Compact(&c, fields); err != nil {
			return nil, err
		}
		fields = c.Bytes()
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

// NewHeaderLine is a new session's first line as pi writes it (current
// version, a fresh UUID read from random, the time at, cwd), with its
// newline: what every store writes to create a session.
func NewHeaderLine(cwd string, at time.Time, random io.Reader) []byte {
	header, _ := json.Marshal(struct {
		Type      string `json:"type"`
		Version   int    `json:"version"`
		ID        string `json:"id"`
		Timestamp string `json:"timestamp"`
		Cwd       string `json:"cwd"`
	}{TypeSession, CurrentVersion, newUUID(random), isoTime(at), cwd})
	return append(header, '\n')
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
