package config

import (
	"path/filepath"
	"testing"
)

// TestExamplesAreStrictlyValid: every shipped example (each file under
// examples/, whatever its format) loads and sets no key without effect, so
// `pith config validate --strict` passes on it as a new user runs it.
func TestExamplesAreStrictlyValid(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("examples", "*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	for _, path := range files {
		if _, err := Load(path, noEnv); err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		inert, err := InertSet(path, noEnv)
		if err != nil || len(inert) > 0 {
			t.Errorf("%s sets keys without effect (validate --strict fails): %v %v", path, inert, err)
		}
	}
}
