//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package mapfile

import (
	"errors"
	"os"
	"syscall"
)

// mapFile maps the first size bytes of f, private and read-only.
func mapFile(f *os.File, size int64) ([]byte, error) {
	if size != int64(int(size)) {
		return nil, errors.New("too large to map")
	}
	sc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	var data []byte
	var mapErr error
	if err := sc.Control(func(fd uintptr) {
		data, mapErr = syscall.Mmap(int(fd), 0, int(size), syscall.PROT_READ, syscall.MAP_PRIVATE)
	}); err != nil {
		return nil, err
	}
	if mapErr != nil {
		return nil, mapErr
	}
	// A file cut between its Stat and the mapping would fault on the
	// first read past its end: read it instead, which reports it.
	if st, err := f.Stat(); err != nil || st.Size() < size {
		_ = syscall.Munmap(data)
		return nil, errors.New("the file shrank")
	}
	remember(f.Name(), data)
	return data, nil
}
