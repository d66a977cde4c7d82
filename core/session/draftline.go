package session

import (
	"encoding/hex"
	"fmt"
	"io"
	"time"
)

// BuildLine lays out d as the entry line Store.Append would write, for
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
