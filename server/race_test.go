//go:build linux

package server

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestSymlinkSwapRace swaps sessions.root/race between a directory and a
// symlink to a directory outside the root (renameat2 RENAME_EXCHANGE, as
// fast as the kernel allows) while sessions are opened and created through
// it. The names opened exist only outside, so any open that succeeds read
// outside the root; afterwards nothing outside may have changed or appeared.
func TestSymlinkSwapRace(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "root")
	outside := filepath.Join(base, "outside")
	inside := filepath.Join(root, "race")
	link := filepath.Join(root, "swap")
	for _, d := range []string{outside, inside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// PITH_HEAVY=1 runs ten times as many.
	opens, creates := 1200, 1200
	if os.Getenv("PITH_HEAVY") == "1" {
		opens, creates = 12000, 12000
	}
	header := `{"type":"session","version":3,"id":"%s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}` + "\n"
	for i := range opens {
		if err := os.WriteFile(filepath.Join(outside, fmt.Sprintf("sec%d.jsonl", i)), fmt.Appendf(nil, header, fmt.Sprintf("outside-%d", i)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	before := snapshot(t, outside)
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	if err := unix.Renameat2(unix.AT_FDCWD, inside, unix.AT_FDCWD, link, unix.RENAME_EXCHANGE); err != nil {
		t.Skipf("renameat2(RENAME_EXCHANGE) not supported here: %v", err)
	}
	cfg := testConfig(root)
	cfg.Server.MaxOpenSessions = 64
	h := startServer(t, cfg)
	srv := h.srv

	stop := make(chan struct{})
	var swaps atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := unix.Renameat2(unix.AT_FDCWD, inside, unix.AT_FDCWD, link, unix.RENAME_EXCHANGE); err != nil {
				t.Errorf("swap: %v", err)
				return
			}
			// Mostly flat out, to land in the middle of lookups; now and
			// then a pause, so that slow calls (a create syncs the file and
			// its directory) also start in the directory state.
			if swaps.Add(1)%64 == 0 {
				time.Sleep(time.Duration(rand.IntN(500)) * time.Microsecond)
			}
		}
	}()

	ctx := context.Background()
	var escapedReads, insideCreates, refused int
	reasons := map[string]int{}
	for i := range max(opens, creates) {
		if i < opens {
			o, _, err := srv.Open(ctx, fmt.Sprintf("race/sec%d.jsonl", i), false, "")
			if err == nil {
				escapedReads++
				t.Errorf("race/sec%d.jsonl opened: a file outside the root was read (session %s)", i, o.id)
				// Try to write through it too, so the check below sees it.
				_, _ = o.appendEntries(ctx, nil)
			} else {
				refused++
			}
		}
		if i < creates {
			name := fmt.Sprintf("race/new%d.jsonl", i)
			if i%4 == 0 {
				name = fmt.Sprintf("race/d%d/new%d.jsonl", i, i)
			}
			o, created, err := srv.Open(ctx, name, true, "/w")
			if err == nil {
				if created {
					insideCreates++
				}
				if _, err := o.engine().AppendMessages(ctx, userMsg("x", 1)); err != nil && !errors.Is(err, ErrShuttingDown) {
					t.Logf("append to %s: %v", name, err)
				}
				if err := srv.CloseSession(ctx, o.id); err != nil {
					t.Fatal(err)
				}
			} else {
				refused++
				reasons[reason(err)]++
			}
		}
	}
	close(stop)
	wg.Wait()

	after := snapshot(t, outside)
	for name, size := range after {
		if old, ok := before[name]; !ok {
			t.Errorf("created outside the root: %s", name)
		} else if old != size {
			t.Errorf("written outside the root: %s (%d → %d bytes)", name, old, size)
		}
	}
	t.Logf("%d opens + %d creates against %d swaps: %d reads outside, %d created inside, %d refused, %d entries outside after (%d before)",
		opens, creates, swaps.Load(), escapedReads, insideCreates, refused, len(after), len(before))
	t.Logf("create refusals: %v", reasons)
	if insideCreates == 0 {
		t.Errorf("no create succeeded: the race was not exercised")
	}
}

// reason is an error's gist, for the log.
func reason(err error) string {
	msg := err.Error()
	for _, r := range []string{"outside sessions.root", "path escapes", "not a regular file", "no directory", "file exists", "not a directory", "no such file"} {
		if strings.Contains(msg, r) {
			return r
		}
	}
	return msg
}

// snapshot lists every path under dir with its size (-1 for directories).
func snapshot(t *testing.T, dir string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if fi.IsDir() {
			out[rel] = -1
		} else {
			out[rel] = fi.Size()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
