package sessiongen

import (
	"os"
	"path/filepath"
	"sync"
)

// Benchmarks over large generated sessions (about 100 MB each) write one
// per test binary and share it; RemoveShared, called by the package's
// TestMain after m.Run, deletes them, so that no run leaves one behind in
// the temporary directory.
var shared struct {
	sync.Mutex
	paths map[string]string // name → path
	dirs  []string
}

// Shared returns the path of the session name, generated with opts on the
// first call of the test binary and reused after.
func Shared(name string, opts Options) (string, error) {
	shared.Lock()
	defer shared.Unlock()
	if p, ok := shared.paths[name]; ok {
		return p, nil
	}
	dir, err := os.MkdirTemp("", "pith-bench-")
	if err != nil {
		return "", err
	}
	shared.dirs = append(shared.dirs, dir)
	p := filepath.Join(dir, name)
	if err := GenerateFile(p, opts); err != nil {
		return "", err
	}
	if shared.paths == nil {
		shared.paths = map[string]string{}
	}
	shared.paths[name] = p
	return p, nil
}

// RemoveShared deletes every session Shared wrote.
func RemoveShared() {
	shared.Lock()
	defer shared.Unlock()
	for _, d := range shared.dirs {
		os.RemoveAll(d)
	}
	shared.dirs, shared.paths = nil, nil
}
