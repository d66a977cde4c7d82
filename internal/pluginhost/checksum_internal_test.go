package pluginhost

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestOpenBinaryRunsTheCheckedBytes: with a configured sha256, the file is
// executed from the descriptor that was checked, so replacing it at its
// path after the check runs nothing else.
func TestOpenBinaryRunsTheCheckedBytes(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("exec from an open file is Linux only")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "plugin")
	good := "#!/bin/sh\necho good\n"
	// A script is run by path (its interpreter reopens it by name), so
	// copy a real executable: /bin/true's bytes, checked, then swapped.
	real, err := os.ReadFile("/bin/true")
	if err != nil {
		t.Skip(err)
	}
	if err := os.WriteFile(path, real, 0o755); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(real)
	sp := Spec{Name: "p", Path: path, SHA256: hex.EncodeToString(sum[:])}
	bin, err := sp.openBinary()
	if err != nil {
		t.Fatal(err)
	}
	defer bin.close()
	if !strings.HasPrefix(bin.path, "/proc/self/fd/") {
		t.Fatalf("executes %s, want the open file", bin.path)
	}
	// Swap the file for one that fails: the checked bytes still run.
	swap := filepath.Join(dir, "swap")
	if err := os.WriteFile(swap, []byte("#!/bin/sh\nexit 7\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(swap, path); err != nil {
		t.Fatal(err)
	}
	if err := exec.Command(bin.path).Run(); err != nil {
		t.Fatalf("running the checked file after the swap: %v", err)
	}

	// A script with the right sum runs by path; a wrong sum is refused.
	script := filepath.Join(dir, "script")
	if err := os.WriteFile(script, []byte(good), 0o755); err != nil {
		t.Fatal(err)
	}
	ssum := sha256.Sum256([]byte(good))
	bin2, err := Spec{Name: "s", Path: script, SHA256: hex.EncodeToString(ssum[:])}.openBinary()
	if err != nil {
		t.Fatal(err)
	}
	bin2.close()
	if bin2.path != script {
		t.Errorf("a script executes %s, want its path", bin2.path)
	}
	if _, err := (Spec{Name: "s", Path: script, SHA256: strings.Repeat("ab", 32)}).openBinary(); !errors.Is(err, ErrChecksumMismatch) {
		t.Errorf("wrong sum: %v, want ErrChecksumMismatch", err)
	}
}
