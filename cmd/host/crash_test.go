package main

import (
	"github.com/pith-dev/pith/internal/pgtest"
	"github.com/pith-dev/pith/internal/testtmp"
	"github.com/pith-dev/pith/store/files"

	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pith-dev/pith/core/compaction"
	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/internal/sessiongen"
)

// The tests of this file run pith, and pi-like appenders, as separate
// processes: this test binary re-executed in one of these modes.
const (
	envCLI       = "PITH_TEST_CLI_ARGS"  // run the CLI with these args (\x1f-separated)
	envPiAppend  = "PITH_TEST_PI_APPEND" // path: append lines as pi does, no lock
	envPiLocked  = "PITH_TEST_LOCKED_APPEND"
	envPiN       = "PITH_TEST_APPEND_N"
	envPiTag     = "PITH_TEST_APPEND_TAG"
	crashEntries = 6000 // CI size: kills land mid-write, a run stays short
)

func TestMain(m *testing.M) {
	switch {
	case os.Getenv(envCLI) != "":
		// The child is the pith command, set up as main sets it up.
		deferFirstCollection()
		containPlugins()
		os.Exit(run(strings.Split(os.Getenv(envCLI), "\x1f"), os.Stdout, os.Stderr))
	case os.Getenv(envPiAppend) != "":
		n, _ := strconv.Atoi(os.Getenv(envPiN))
		os.Exit(piAppender(os.Getenv(envPiAppend), os.Getenv(envPiTag), n))
	case os.Getenv(envPiLocked) != "":
		n, _ := strconv.Atoi(os.Getenv(envPiN))
		os.Exit(lockedAppender(os.Getenv(envPiLocked), os.Getenv(envPiTag), n))
	}
	// The commands read a configuration and a Describe cache of the
	// developer's when there is one: the tests run as on a machine
	// without, and name their files.
	pgtest.Main(m, testtmp.UserDirs())
}

// piAppender appends n entries with appendFileSync's semantics: open with
// O_APPEND, one write, close, no lock; a short random pause between them.
func piAppender(path, tag string, n int) int {
	for i := range n {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		line := fmt.Sprintf(`{"type":"custom","id":"%s%06d","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","customType":"pi","data":{}}`+"\n", tag, i)
		if _, err := f.WriteString(line); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		f.Close()
		time.Sleep(time.Duration(rand.IntN(3000)) * time.Microsecond)
	}
	return 0
}

// lockedAppender appends n entries through a Store, as pith does.
func lockedAppender(path, tag string, n int) int {
	s, err := files.Open(path, files.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer s.Close()
	for i := range n {
		if _, err := s.Append(session.Draft{Type: session.TypeCustom, Fields: map[string]any{"customType": "locked", "data": tag + strconv.Itoa(i)}}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		time.Sleep(time.Duration(rand.IntN(3000)) * time.Microsecond)
	}
	return 0
}

func child(env string, val string, extra ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), env+"="+val), extra...)
	return cmd
}

func cliChild(args ...string) *exec.Cmd {
	cmd := child(envCLI, strings.Join(args, "\x1f"))
	cmd.Env = append(cmd.Env, "HOME="+os.TempDir())
	return cmd
}

func crashSize() int {
	if os.Getenv("PITH_HEAVY") == "1" {
		return 100000 // ≈ 100 MB
	}
	return crashEntries
}

func generate(t *testing.T, path string, version int) []byte {
	t.Helper()
	o := sessiongen.Benchmark(7, crashSize())
	o.Malformed, o.TornTail, o.Version = 0, false, version
	if err := sessiongen.GenerateFile(path, o); err != nil {
		t.Fatal(err)
	}
	return readFile(t, path)
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// killLoop runs the command kills times, each killed with SIGKILL at a
// random moment within 1.5 × a clean run's duration, and calls check
// after each. It reports how many runs were cut short.
func killLoop(t *testing.T, kills int, args func(i int) []string, check func(i int, finished bool)) {
	t.Helper()
	start := time.Now()
	if out, err := cliChild(args(0)...).CombinedOutput(); err != nil {
		t.Fatalf("clean run: %v\n%s", err, out)
	}
	d := time.Since(start)
	check(0, true)
	cut := 0
	for i := 1; i <= kills; i++ {
		cmd := cliChild(args(i)...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(rand.Int64N(int64(d)*3/2 + 1)))
		cmd.Process.Signal(syscall.SIGKILL)
		err := cmd.Wait()
		finished := err == nil
		if !finished {
			cut++
		}
		check(i, finished)
	}
	t.Logf("%d kills, %d landed before the end (a clean run took %v)", kills, cut, d.Round(time.Millisecond))
}

func killCount() int {
	if n, err := strconv.Atoi(os.Getenv("PITH_KILLS")); err == nil {
		return n
	}
	return 50
}

// TestKillPruneRestore kills prune and restore, alternating, on one file:
// after every kill the session parses whole, keeps every entry, and with
// its archive restores to the original bytes; the archive never fills up
// with repeats.
func TestKillPruneRestore(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.jsonl")
	original := generate(t, path, 3)
	orig, err := session.Parse(original)
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	orig.Encode(&want)
	killLoop(t, killCount(), func(i int) []string {
		if i%2 == 1 {
			return []string{"prune", path, "--restore"}
		}
		return []string{"prune", path, "--protect", "2000", "--minimum", "1"}
	}, func(i int, finished bool) {
		f, err := session.Load(path)
		if err != nil || len(f.Warnings) > 0 || len(f.Entries) != len(orig.Entries) {
			t.Fatalf("kill %d: %v, %d entries of %d", i, err, len(f.Entries), len(orig.Entries))
		}
		arch, _ := os.ReadFile(compaction.ArchivePath(path))
		back, res, err := compaction.RestoreFile(f, arch)
		if err != nil || len(res.Refused) > 0 {
			t.Fatalf("kill %d: %v %v", i, res.Refused, err)
		}
		var got bytes.Buffer
		back.Encode(&got)
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Fatalf("kill %d: session + archive do not give back the original", i)
		}
		if finished {
			if names, _ := filepath.Glob(filepath.Join(dir, ".s.jsonl.tmp-*")); len(names) > 0 {
				t.Fatalf("kill %d: a finished run left %v", i, names)
			}
		}
	})
	// Every record is there once: repeats were not archived again.
	arch := readFile(t, compaction.ArchivePath(path))
	seen := map[string]bool{}
	for _, l := range bytes.Split(bytes.TrimSuffix(arch[:bytes.LastIndexByte(arch, '\n')+1], []byte("\n")), []byte("\n")) {
		r, err := compaction.ParseArchiveRecord(l)
		if err != nil {
			t.Fatal(err)
		}
		key := fmt.Sprint(r.Pos, r.SHA256)
		if seen[key] {
			t.Fatalf("record of position %d archived twice", r.Pos)
		}
		seen[key] = true
	}
}

// TestKillMigrate kills migrate --in-place: the file is always the old
// version or the whole new one.
func TestKillMigrate(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.jsonl")
	v2 := generate(t, path, 2)
	var migrated []byte
	killLoop(t, killCount(), func(int) []string {
		if migrated != nil && bytes.Equal(readFile(t, path), migrated) {
			os.WriteFile(path, v2, 0o644)
		}
		return []string{"migrate", path, "--in-place"}
	}, func(i int, finished bool) {
		got := readFile(t, path)
		if i == 0 {
			migrated = got
			return
		}
		if !bytes.Equal(got, v2) && !bytes.Equal(got, migrated) {
			t.Fatalf("kill %d: the file is neither the old one nor the migrated one", i)
		}
	})
}

// TestKillCompact kills pith compact: right after a kill the file is the
// original, the original plus one whole compaction line, or the original
// plus the start of one. The last is no bug of Pith's: Linux copies a
// write() page by page and stops at a pending SIGKILL, so the kernel can
// cut a multi-page line short, and no user-space trick prevents that. The
// append intent makes the next Pith write undo it, so after one more
// write command (pith label) the file is the original plus whole lines.
func TestKillCompact(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.jsonl")
	original := generate(t, path, 3)
	orig, err := session.Parse(original)
	if err != nil {
		t.Fatal(err)
	}
	firstID := orig.Entries[0].ID
	torn := 0
	killLoop(t, killCount(), func(int) []string {
		if !bytes.Equal(readFile(t, path), original) {
			os.WriteFile(path, original, 0o644)
		}
		return []string{"compact", path, "--keep-recent-tokens", "2000"}
	}, func(i int, finished bool) {
		got := readFile(t, path)
		if bytes.Equal(got, original) {
			return
		}
		rest, ok := bytes.CutPrefix(got, original)
		if !ok || bytes.Count(rest, []byte("\n")) > 1 || bytes.Count(rest, []byte("\n")) == 1 && rest[len(rest)-1] != '\n' {
			t.Fatalf("kill %d: the file changed by %d bytes that are not one line or the start of one", i, len(got)-len(original))
		}
		if rest[len(rest)-1] == '\n' {
			if e, err := session.ParseEntry(rest[:len(rest)-1]); err != nil || e.Type != session.TypeCompaction {
				t.Fatalf("kill %d: appended %v %v", i, e, err)
			}
			return
		}
		if finished {
			t.Fatalf("kill %d: a finished compact left %d bytes of a line", i, len(rest))
		}
		if !bytes.HasPrefix(rest, []byte(`{"type":"compaction"`)) {
			t.Fatalf("kill %d: a piece of something else was appended: %.100q", i, rest)
		}
		torn++
		if out, err := cliChild("label", path, firstID, "after-kill").CombinedOutput(); err != nil {
			t.Fatalf("kill %d: label after the kill: %v\n%s", i, err, out)
		}
		rest, ok = bytes.CutPrefix(readFile(t, path), original)
		if !ok || bytes.Count(rest, []byte("\n")) != 1 || rest[len(rest)-1] != '\n' {
			t.Fatalf("kill %d: after the next write the file is not the original plus whole lines: %.200q", i, rest)
		}
		if e, err := session.ParseEntry(rest[:len(rest)-1]); err != nil || e.Type != session.TypeLabel {
			t.Fatalf("kill %d: after the next write: %v %v", i, e, err)
		}
	})
	t.Logf("%d kills cut the compaction line short; the next write undid each", torn)
}

// TestRewritesKeepConcurrentAppends runs prune, restore and migrate
// --in-place again and again while a pi-style appender (no lock, O_APPEND)
// and a pith Store append from other processes: every appended line is in
// the file exactly once, and no line is malformed.
//
// This holds on Linux, where a rewrite can learn (with a lease) when no
// other process has the replaced file open any more; see drainReplaced in
// core/session. Elsewhere, or when another process keeps the replaced
// file open past the wait, a pi line whose open came before the rename
// and whose write came after the rewrite's last copy would be lost: on a
// loaded 2-core machine the migrate case lost one line in 3 of 30 runs
// before the rewrite waited for the old file's last writer, 0 in 390
// after.
func TestRewritesKeepConcurrentAppends(t *testing.T) {
	const n = 150
	for _, mode := range []string{"prune", "migrate"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "s.jsonl")
			version := 3
			if mode == "migrate" {
				version = 2
			}
			original := generate(t, path, version)
			pi := child(envPiAppend, path, envPiN+"="+strconv.Itoa(n), envPiTag+"=pi")
			locked := child(envPiLocked, path, envPiN+"="+strconv.Itoa(n), envPiTag+"=lk")
			var out bytes.Buffer
			pi.Stderr, locked.Stderr = &out, &out
			if mode == "migrate" {
				locked = nil // a v2 file takes no pith appends until migrated
			}
			var wg sync.WaitGroup
			for _, c := range []*exec.Cmd{pi, locked} {
				if c == nil {
					continue
				}
				if err := c.Start(); err != nil {
					t.Fatal(err)
				}
				wg.Go(func() {
					if err := c.Wait(); err != nil {
						t.Errorf("appender: %v: %s", err, out.String())
					}
				})
			}
			done := make(chan struct{})
			go func() { wg.Wait(); close(done) }()
			runs := 0
		loop:
			for {
				select {
				case <-done:
					break loop
				default:
				}
				var args []string
				switch {
				case mode == "migrate":
					// Put the old version back (keeping what was
					// appended) so every run rewrites.
					cur := readFile(t, path)
					if i := bytes.IndexByte(cur, '\n'); i > 0 && bytes.Contains(cur[:i], []byte(`"version":3`)) {
						s, err := files.Open(path, files.Options{})
						if err != nil {
							t.Fatal(err)
						}
						err = s.Update(func(tx *session.Tx) (*session.File, error) {
							f := *tx.File()
							f.Header.Raw = bytes.Replace(f.Header.Raw, []byte(`"version":3`), []byte(`"version":2`), 1)
							return &f, nil
						})
						s.Close()
						if err != nil {
							t.Fatal(err)
						}
					}
					args = []string{"migrate", path, "--in-place"}
				case runs%2 == 0:
					args = []string{"prune", path, "--protect", "2000", "--minimum", "1"}
				default:
					args = []string{"prune", path, "--restore"}
				}
				if _, stderr, code := runCLI(t, args...); code != 0 {
					t.Fatalf("%v: %s", args, stderr)
				}
				runs++
			}
			got := readFile(t, path)
			// Counted on the parsed file, not on raw bytes: a line torn
			// or glued onto another still holds its id but is no entry.
			f, err := session.Parse(got)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range f.Warnings {
				t.Errorf("a malformed line in the result: %v", w)
			}
			count := map[string]int{}
			for _, e := range f.Entries {
				if e.Type != session.TypeCustom {
					continue
				}
				key := e.ID // pi's lines carry their own ids
				var c struct {
					CustomType string `json:"customType"`
					Data       any    `json:"data"`
				}
				json.Unmarshal(e.Raw, &c)
				if c.CustomType == "locked" {
					key = fmt.Sprint(c.Data)
				}
				count[key]++
			}
			for _, tag := range []string{"pi", "lk"} {
				if tag == "lk" && mode == "migrate" {
					continue
				}
				var lost, doubled []string
				for i := range n {
					key := fmt.Sprintf("%s%06d", tag, i)
					if tag == "lk" {
						key = fmt.Sprintf("%s%d", tag, i)
					}
					switch c := count[key]; {
					case c == 0:
						lost = append(lost, key)
					case c > 1:
						doubled = append(doubled, key)
					}
				}
				if len(lost)+len(doubled) > 0 {
					t.Errorf("%s: of %d appended lines, lost %v, doubled %v, over %d rewrites", tag, n, lost, doubled, runs)
				}
			}
			if !bytes.HasPrefix(got, original[:bytes.IndexByte(original, '\n')]) && mode == "prune" {
				t.Error("the header changed")
			}
			if locked != nil {
				t.Logf("%d rewrites during %d unlocked + %d locked appends", runs, n, n)
			} else {
				t.Logf("%d rewrites during %d unlocked appends", runs, n)
			}
		})
	}
}
