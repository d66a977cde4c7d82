package viewer_test

import (
	"os"
	"testing"

	"github.com/pith-dev/pith/internal/sessiongen"
)

// TestMain removes the generated benchmark session (110 MB) after the run.
func TestMain(m *testing.M) {
	code := m.Run()
	sessiongen.RemoveShared()
	os.Exit(code)
}
