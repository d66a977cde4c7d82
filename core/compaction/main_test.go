package compaction

import (
	"os"
	"testing"

	"github.com/pith-dev/pith/internal/sessiongen"
)

// TestMain removes the large sessions the benchmarks generated, or is
// the killed child of TestKillAtEveryStep.
func TestMain(m *testing.M) {
	if spec := os.Getenv(envKillStep); spec != "" {
		os.Exit(killStepChild(spec))
	}
	code := m.Run()
	sessiongen.RemoveShared()
	os.Exit(code)
}
