package mapfile

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// MinSize is the size from which Bytes maps: below it, reading is as
// cheap as setting up a mapping.
const MinSize = 1 << 20

// Bytes returns the first size bytes of f (size as Stat gave it), mapped
// when the platform can and size is at least MinSize, else read. The
// bytes must not be written to, and stay valid after f is closed.
func Bytes(f *os.File, size int64) ([]byte, error) {
	if size >= MinSize {
		if data, err := mapFile(f, size); err == nil {
			return data, nil
		}
		// A file system that cannot be mapped is read instead.
	}
	return read(f, size)
}

// read reads the first size bytes of f in one call.
func read(f *os.File, size int64) ([]byte, error) {
	if size != int64(int(size)) {
		return nil, fmt.Errorf("read: %d bytes is too large", size)
	}
	data := make([]byte, size)
	if n, err := f.ReadAt(data, 0); err != nil && !(errors.Is(err, io.EOF) && int64(n) == size) {
		return nil, fmt.Errorf("read: %w", err)
	}
	return data, nil
}
