// Package testproc checks, in tests, that the processes a test started
// are gone: plugins must not outlive the command or daemon that started
// them. It reads /proc, so on other systems it finds none.
package testproc

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Children lists the live child processes of the test binary (zombies,
// exited but not yet reaped, left out).
func Children(t testing.TB) []int {
	t.Helper()
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var out []int
	me := os.Getpid()
	for _, s := range stats {
		data, err := os.ReadFile(s)
		if err != nil {
			continue // exited meanwhile
		}
		// pid (comm) state ppid …; comm may hold spaces and parentheses.
		rest := string(data[bytes.LastIndexByte(data, ')')+1:])
		f := strings.Fields(rest)
		if len(f) < 2 || f[0] == "Z" {
			continue
		}
		if ppid, _ := strconv.Atoi(f[1]); ppid == me {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(s)))
			out = append(out, pid)
		}
	}
	return out
}

// RequireNoChildren waits for the test's child processes to be reaped and
// fails if one is still alive after a generous grace period.
func RequireNoChildren(t testing.TB) {
	t.Helper()
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		return
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		left := Children(t)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("plugin processes still running: %v", left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
