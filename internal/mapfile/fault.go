package mapfile

import (
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"unsafe"
)

// ErrCut is what reading a mapping past the end of its file gives instead
// of SIGBUS, under Guard: the file was cut shorter in place while a
// command read it.
var ErrCut = errors.New("the file was cut shorter while it was being read (truncated in place by another program)")

// mappings are the address ranges this package mapped, which are never
// unmapped: a fault inside one is a file cut under its reader, any other
// fault a bug that must still crash.
var mappings struct {
	sync.Mutex
	ranges []mapping
}

type mapping struct {
	start, end uintptr
	name       string // the file's, for the error
}

func remember(name string, data []byte) {
	if len(data) == 0 {
		return
	}
	start := uintptr(unsafe.Pointer(unsafe.SliceData(data)))
	mappings.Lock()
	mappings.ranges = append(mappings.ranges, mapping{start, start + uintptr(len(data)), name})
	mappings.Unlock()
}

// mappedFile is the name of the file whose mapping holds addr.
func mappedFile(addr uintptr) (string, bool) {
	mappings.Lock()
	defer mappings.Unlock()
	for _, m := range mappings.ranges {
		if addr >= m.start && addr < m.end {
			return m.name, true
		}
	}
	return "", false
}

// Guard runs f on the calling goroutine with faults turned into panics
// (debug.SetPanicOnFault) and returns ErrCut, after the file's name, for
// one that hit a mapping of this package; any other panic goes on. Every goroutine that reads
// mapped bytes runs its reading under Guard: the setting is the
// goroutine's own, and a fault on a goroutine without it still kills the
// process.
func Guard(f func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if v := recover(); v != nil {
			if name, ok := cutFile(v); ok {
				err = fmt.Errorf("%s: %w", name, ErrCut)
				return
			}
			panic(v)
		}
	}()
	return f()
}

// cutFile reports whether v, a value recovered from a panic, is a fault
// reading a mapping of this package, and of which file.
func cutFile(v any) (string, bool) {
	fault, ok := v.(interface{ Addr() uintptr })
	if !ok {
		return "", false
	}
	return mappedFile(fault.Addr())
}
