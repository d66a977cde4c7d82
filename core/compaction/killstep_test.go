package compaction

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/internal/faultfs"
)

// envKillStep makes the test binary a child that runs one command of the
// fault sweep and kills itself with SIGKILL right before its Nth file
// operation: "command:N:path" (killStepChild).
const envKillStep = "PITH_TEST_KILL_STEP"

// killStepChild is the child's side of TestKillAtEveryStep. It exits 0
// when the command has fewer than N operations.
func killStepChild(spec string) int {
	name, rest, _ := strings.Cut(spec, ":")
	nStr, path, _ := strings.Cut(rest, ":")
	n, err := strconv.Atoi(nStr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bad", envKillStep, spec)
		return 2
	}
	for _, cmd := range faultCommands() {
		if cmd.name != name {
			continue
		}
		var steps atomic.Int64
		c := faultfs.New()
		c.Before = func(faultfs.Op, int) {
			if steps.Add(1) == int64(n) {
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
				select {} // the signal is on its way
			}
		}
		if err := runCommand(path, c, cmd); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return 0
	}
	fmt.Fprintln(os.Stderr, "no command", name)
	return 2
}

// TestKillAtEveryStep kills each command of the fault sweep (label,
// navigate, compact, prune, restore, migrate) with SIGKILL before every
// single file operation in turn — every write, fsync, truncate, rename,
// create, remove and directory sync — in a child process, then checks
// what pi and the next Pith command find: the session is exactly as
// before or exactly as a clean run leaves it (never a half rewrite, never
// a compaction without its entry's end), parses without a warning, the
// lock died with the process, the archive restores whatever the session
// has pruned, and the same command run again ends where a clean run ends
// (rewrites) or appends whole lines after what is there (appends), with
// no temp file left.
//
// With PITH_HEAVY=1 the same runs on a session of about 40 MB, whose
// rewrite takes many writes, each a place to be killed.
//
// It runs on a short name and on one of 250 bytes, whose temp files (the
// ones a kill leaves, which the next run removes), archive and intent
// sidecar are named by a cut of it (session.SideName).
func TestKillAtEveryStep(t *testing.T) {
	long := strings.Repeat("l", 250-len(".jsonl")) + ".jsonl"
	killAtEveryStep(t, "s.jsonl")
	t.Run("250-byte-name", func(t *testing.T) { killAtEveryStep(t, long) })
	if os.Getenv("PITH_HEAVY") == "1" {
		faultPadding = 500 // 500 turns of 80 000 bytes
		defer func() { faultPadding = 0 }()
		t.Run("heavy", func(t *testing.T) { killAtEveryStep(t, "s.jsonl") })
	}
}

func killAtEveryStep(t *testing.T, name string) {
	for _, cmd := range faultCommands() {
		t.Run(cmd.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, name)
			cmd.setup(t, path)
			before := snap(t, path)
			counter := faultfs.New()
			if err := runCommand(path, counter, cmd); err != nil {
				t.Fatalf("clean run: %v", err)
			}
			want := snap(t, path)
			total := 0
			for _, op := range faultfs.Ops() {
				total += counter.Count(op)
			}
			restored := 0
			if cmd.name == "prune" {
				_, res, err := RestoreFile(mustParse(t, want.session), want.archive)
				if err != nil {
					t.Fatal(err)
				}
				restored = res.Restored
			}
			for n := 1; n <= total; n++ {
				checkKill(t, name, cmd, n, before, want, restored)
			}
			t.Logf("%s: killed before each of %d operations (%s)", cmd.name, total, opCounts(counter))
		})
	}
}

func checkKill(t *testing.T, name string, cmd faultCommand, n int, before, want snapshot, restored int) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, name)
	cmd.setup(t, path)
	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), fmt.Sprintf("%s=%s:%d:%s", envKillStep, cmd.name, n, path))
	var stderr bytes.Buffer
	child.Stderr = &stderr
	err := child.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("step %d: the child was not killed: %v %s", n, err, stderr.Bytes())
	}
	got := snap(t, path)
	if !bytes.Equal(got.session, before.session) && !bytes.Equal(got.session, want.session) {
		t.Fatalf("step %d: the session is neither as before nor as a clean run leaves it:\n%s", n, got.session)
	}
	if f := mustParse(t, got.session); len(f.Warnings) > len(mustParse(t, before.session).Warnings) {
		t.Fatalf("step %d: a reader is warned: %v", n, f.Warnings)
	}
	if !bytes.HasPrefix(got.archive, before.archive[:completeRecords(before.archive)]) {
		t.Fatalf("step %d: the archive lost records", n)
	}
	if cmd.name == "prune" && !bytes.Equal(got.session, before.session) {
		if _, res, err := RestoreFile(mustParse(t, got.session), got.archive); err != nil || res.Restored != restored {
			t.Fatalf("step %d: the archive cannot restore the pruned session: %+v %v", n, res, err)
		}
	}
	// The lock went with the process: a non-blocking exclusive lock is
	// granted at once.
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatalf("step %d: the session is still locked: %v", n, err)
	}
	f.Close()
	// The next run.
	if err := runCommand(path, faultfs.New(), cmd); err != nil && !bytes.Equal(got.session, want.session) {
		t.Fatalf("step %d: the next run failed: %v", n, err)
	}
	final := snap(t, path)
	if cmd.rewrites {
		if !bytes.Equal(final.session, want.session) {
			t.Fatalf("step %d: after the next run the session differs from a clean run's:\n%s", n, final.session)
		}
		if names, _ := filepath.Glob(filepath.Join(dir, session.SideStem(".", name, len(".tmp-")+16)+".tmp-*")); len(names) > 0 {
			t.Fatalf("step %d: temp files left after the next run: %v", n, names)
		}
		return
	}
	if !bytes.HasPrefix(final.session, got.session) {
		t.Fatalf("step %d: the next append changed earlier bytes", n)
	}
	if f := mustParse(t, final.session); len(f.Warnings) > len(mustParse(t, before.session).Warnings) {
		t.Fatalf("step %d: damaged lines after the next run: %v", n, f.Warnings)
	}
}
