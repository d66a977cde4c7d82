package compaction

import (
	"os"
	"testing"

	"github.com/pith-dev/pith/internal/sessiongen"
)

// TestMain removes the large sessions the benchmarks generated.
func TestMain(m *testing.M) {
	code := m.Run()
	sessiongen.RemoveShared()
	os.Exit(code)
}
