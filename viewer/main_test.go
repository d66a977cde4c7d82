package viewer_test

import (
	"os"
	"path/filepath"
	"testing"
)

// TestMain removes the generated benchmark session (110 MB) after the run.
func TestMain(m *testing.M) {
	code := m.Run()
	if benchPath != "" {
		os.RemoveAll(filepath.Dir(benchPath))
	}
	os.Exit(code)
}
