package pi_test

import (
	"os/exec"
	"testing"

	"github.com/pith-dev/pith/internal/testtmp"
)

// TestUnits runs test/*.test.ts under node --test, loaded through jiti as pi
// loads the extension: the checks of what Pith answers.
func TestUnits(t *testing.T) {
	requirePi(t)
	cmd := exec.Command("node", "--import", "jiti/register", "--test", "test/protocol.test.ts")
	cmd.Env = append(cmd.Environ(), "TMPDIR="+testtmp.Short(t))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("node --test: %v\n%s", err, out)
	}
}
