//go:build linux

package server

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestSymlinkSwapRace swaps sessions.root/race between a directory and a
// symlink to a directory outside the root (renameat2 RENAME_EXCHANGE)
// while sessions are opened and created through it: first flat out, then
// with one swap aimed at a random moment inside each call, calls starting
// in either state in turn. The names opened exist only outside, so any
// open that succeeds read outside the root; afterwards nothing outside may
// have changed or appeared.
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

	ctx := context.Background()
	var swaps atomic.Int64
	swap := func() {
		if err := unix.Renameat2(unix.AT_FDCWD, inside, unix.AT_FDCWD, link, unix.RENAME_EXCHANGE); err != nil {
			t.Errorf("swap: %v", err)
			return
		}
		swaps.Add(1)
	}
	// dirState reports whether race is the directory now (after the
	// exchange above it is the symlink; every swap flips it).
	dirState := func() bool { return swaps.Load()%2 == 1 }

	var escapedReads, insideCreates, refused int
	reasons := map[string]int{}
	call := func(i int) {
		if i < opens {
			o, _, err := srv.Open(ctx, fmt.Sprintf("race/sec%d.jsonl", i), false, "")
			if err == nil {
				escapedReads++
				t.Errorf("race/sec%d.jsonl opened: a file outside the root was read (session %s)", i, o.id)
				// Try to write through it too, so the check below sees it.
				_, _ = o.engine().AppendMessages(ctx, userMsg("x", 1))
			} else {
				refused++
				if status.Code(toStatus(err)) == codes.Internal {
					t.Errorf("open race/sec%d.jsonl: Internal for a refusal: %v", i, err)
				}
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
				if _, err := o.engine().AppendMessages(ctx, userMsg("x", 1)); err != nil {
					t.Logf("append to %s: %v", name, err)
				}
				if err := srv.CloseSession(ctx, o.id); err != nil {
					t.Fatal(err)
				}
			} else {
				refused++
				reasons[reason(err)]++
				if status.Code(toStatus(err)) == codes.Internal {
					t.Errorf("create %s: Internal for a refusal: %v", name, err)
				}
			}
		}
	}

	// Phase 1, flat out: the swapper exchanges the two names as fast as
	// the kernel allows while the calls run, catching lookups midway.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
				swap()
			}
		}
	}()
	half := max(opens, creates) / 2
	for i := range half {
		call(i)
	}
	close(stop)
	wg.Wait()
	phase1Creates := insideCreates

	// Phase 2, aimed: each call starts in a chosen state, the directory
	// and the symlink in turn, and exactly one swap lands at a random
	// moment during it. Flat out, nearly every call starts on the
	// symlink (a refusal takes microseconds, a create syncs twice).
	for i := half; i < max(opens, creates); i++ {
		if dirState() != (i%2 == 0) {
			swap()
		}
		done := make(chan struct{})
		spin := rand.IntN(200000)
		go func() {
			defer close(done)
			for j := 0; j < spin; j++ {
				if j%1024 == 0 {
					runtime.Gosched()
				}
			}
			swap()
		}()
		call(i)
		<-done
	}

	after := snapshot(t, outside)
	for name, size := range after {
		if old, ok := before[name]; !ok {
			t.Errorf("created outside the root: %s", name)
		} else if old != size {
			t.Errorf("written outside the root: %s (%d → %d bytes)", name, old, size)
		}
	}
	t.Logf("%d opens + %d creates against %d swaps: %d reads outside, %d created inside (%d flat out, %d aimed), %d refused, %d entries outside after (%d before)",
		opens, creates, swaps.Load(), escapedReads, insideCreates, phase1Creates, insideCreates-phase1Creates, refused, len(after), len(before))
	t.Logf("create refusals: %v", reasons)
	if insideCreates == 0 {
		t.Errorf("no create succeeded: the race was not exercised")
	}
}

// reason is an error's gist, for the log.
func reason(err error) string {
	msg := err.Error()
	for _, r := range []string{"outside sessions.root", "path escapes", "too many levels of symbolic links", "not a regular file", "no directory", "file exists", "not a directory", "no such file"} {
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
