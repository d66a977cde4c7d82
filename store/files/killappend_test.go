package files_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/store/files"
)

// envHugeAppend makes the test binary a child that appends one huge line
// to the session at this path (hugeAppend).
const envHugeAppend = "PITH_TEST_HUGE_APPEND"

// hugeLineSize is large enough that writing the line takes the kernel
// milliseconds, so a kill sent when the file starts to grow lands inside
// the write.
const hugeLineSize = 32 << 20

func hugeAppend(path string) int {
	s, err := files.Open(path, files.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fields := json.RawMessage(`{"customType":"huge","data":"` + strings.Repeat("x", hugeLineSize) + `"}`)
	if _, err := s.Append(session.Draft{Type: session.TypeCustom, Fields: fields}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// TestKilledHugeAppendIsUndone kills a process with SIGKILL while it
// appends a 32 MB line — for real: Linux copies a write page by page and
// stops at the pending signal, so the file is left with the start of the
// line — and checks that the next append cuts that piece off: the file is
// the original plus whole lines.
func TestKilledHugeAppendIsUndone(t *testing.T) {
	path := newSession(t, t.TempDir(), 5)
	original := mustRead(t, path)
	torn := 0
	const runs = 5
	for i := range runs {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), envHugeAppend+"="+path)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Kill as soon as the file grows: the write is under way.
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); {
			st, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if st.Size() > int64(len(original)) {
				break
			}
		}
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		got := mustRead(t, path)
		rest, ok := bytes.CutPrefix(got, original)
		if !ok {
			t.Fatalf("run %d: the original content changed", i)
		}
		if len(rest) > 0 && rest[len(rest)-1] != '\n' {
			torn++
		}
		s, err := files.Open(path, files.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Append(session.Draft{Type: session.TypeCustom, Fields: map[string]any{"customType": "after"}}); err != nil {
			t.Fatal(err)
		}
		s.Close()
		got = mustRead(t, path)
		rest, _ = bytes.CutPrefix(got, original)
		for _, l := range bytes.SplitAfter(rest, []byte("\n")) {
			if len(l) == 0 {
				continue
			}
			if _, err := session.ParseEntry(bytes.TrimSuffix(l, []byte("\n"))); err != nil || l[len(l)-1] != '\n' {
				t.Fatalf("run %d: after the next append the file holds a line that is not whole (%d bytes): %v", i, len(l), err)
			}
		}
		if err := os.WriteFile(path, original, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d of %d kills cut the write short; the next append undid each", torn, runs)
}
