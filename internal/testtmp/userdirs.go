package testtmp

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
)

// envUserDirs names, for the processes a test binary starts, the
// directory UserDirs made: a child uses it rather than make its own.
const envUserDirs = "PITH_TEST_USER_DIRS"

// UserDirs keeps a test binary off the directories of the user who runs
// it: $XDG_CONFIG_HOME (Pith's default configuration file) and
// $XDG_CACHE_HOME (its plugin Describe cache) point into one temporary
// directory for the whole binary, and PITH_CONFIG is unset, so tests run
// as on a machine without a configuration and never fill the user's
// cache. The go command that tests run keeps the user's build cache,
// module cache and `go env -w` settings: they are pinned by their real
// paths first. The processes the binary starts (itself re-run as pith or
// as a helper) inherit the same directory instead of making their own,
// so one killed on purpose leaves nothing behind. Call it from TestMain;
// cleanup removes the directory (in a child it does nothing).
func UserDirs() (cleanup func()) {
	if os.Getenv(envUserDirs) != "" {
		return func() {}
	}
	pinGoDirs()
	dir, err := os.MkdirTemp("", "pith-test-home-")
	if err != nil {
		panic(err)
	}
	os.Setenv(envUserDirs, dir)
	os.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "config"))
	os.Setenv("XDG_CACHE_HOME", filepath.Join(dir, "cache"))
	os.Unsetenv("PITH_CONFIG")
	return func() { os.RemoveAll(dir) }
}

// pinGoDirs sets GOCACHE, GOMODCACHE, GOPATH and GOENV to what the go
// command uses now, since by default it derives them from the very
// directories UserDirs moves: an empty build cache would make every
// test that builds a plugin compile the world again. Without a go
// command there is nothing to pin.
func pinGoDirs() {
	out, err := exec.Command("go", "env", "-json", "GOCACHE", "GOMODCACHE", "GOPATH", "GOENV").Output()
	if err != nil {
		return
	}
	var dirs map[string]string
	if json.Unmarshal(out, &dirs) != nil {
		return
	}
	for k, v := range dirs {
		if v != "" {
			os.Setenv(k, v)
		}
	}
}
