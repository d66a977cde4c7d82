package session

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/pith-dev/pith/internal/mapfile"
)

// LoadOptions are what LoadWith takes in beyond the path.
type LoadOptions struct {
	ParseOptions
	// Mapped maps the file instead of reading it (internal/mapfile): no
	// copy of its bytes, for a command that reads the session, writes
	// nothing and exits. The mapping stays for the rest of the process.
	Mapped bool
}

// readSession is the whole of an opened session file of size bytes.
func readSession(h *os.File, size int64, mapped bool) ([]byte, error) {
	if mapped {
		return mapfile.Bytes(h, size)
	}
	data := make([]byte, size)
	if n, err := h.ReadAt(data, 0); err != nil && !(errors.Is(err, io.EOF) && int64(n) == size) {
		return nil, fmt.Errorf("read: %w", err)
	}
	return data, nil
}
