// Package testfixture finds the test fixtures that live outside the
// repository — the sessions real pi wrote, in ../shared/testdata/pi beside
// the checkout — and decides what their absence means. In a user's clone
// they are missing and the tests that need them skip, saying which
// directory they looked for; under CI (CI=true) a missing fixture is a
// failure, so a CI run never goes green without the conformance tests
// having run.
package testfixture

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// piFromRoot is where the pi sessions are, relative to the repository root.
const piFromRoot = "../shared/testdata/pi"

var root = sync.OnceValue(func() string {
	dir, err := os.Getwd()
	if err != nil {
		return "."
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			return dir
		}
	}
})

// PiDir is the directory of the shared pi sessions, found from the
// module's root (the nearest go.mod above the test's directory).
func PiDir() string {
	return filepath.Join(root(), filepath.FromSlash(piFromRoot))
}

// CI reports whether the tests run under CI, where nothing may be missing.
func CI() bool { return os.Getenv("CI") == "true" }

// Missing ends a test whose fixture is not there: it skips with the
// message, or, under CI=true, fails with it.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	if CI() {
		t.Fatalf("fixture missing under CI=true (CI must have ../shared/testdata/pi): "+format, args...)
		return
	}
	t.Skipf(format, args...)
}

// Pi returns the path of the pi session name, ending the test through
// Missing when it is not there.
func Pi(t testing.TB, name string) string {
	t.Helper()
	p := filepath.Join(PiDir(), name)
	if _, err := os.Stat(p); err != nil {
		Missing(t, "pi fixture not available: %v", err)
	}
	return p
}
