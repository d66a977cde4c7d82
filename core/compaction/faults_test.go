package compaction

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/internal/faultfs"
	"github.com/pith-dev/pith/store/files"
)

// A command of the fault-injection sweep: setup makes the session (and
// archive) in dir, run is the command on an open Store.
type faultCommand struct {
	name  string
	setup func(t *testing.T, path string)
	run   func(store *files.Session) error
	// rewrites marks commands that replace the file (vs. append to it).
	rewrites bool
}

var faultNow = time.UnixMilli(1767225600000)

// detRandom is a fixed id and temp-name source, so a run with a fault and
// one without write the same bytes.
func detRandom() io.Reader { return rand.NewChaCha8([32]byte{7}) }

// faultPadding, when set, puts that many large user turns first, so a
// rewrite's encoding takes many writes (TestKillAtEveryStep, PITH_HEAVY).
var faultPadding int

func faultSession(b *builder) []byte {
	for range faultPadding {
		b.user(20000)
	}
	b.user(10)
	b.assistant(10, "c1:bash", "c2:bash", "c3:bash")
	b.result("c1", "bash", 3000)
	b.result("c2", "bash", 3000)
	b.result("c3", "bash", 1000)
	b.user(10)
	b.assistant(10)
	return b.data()
}

func writeSession(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

var pruneSettings = PruneSettings{Protect: 1000, Minimum: 100}

func faultCommands() []faultCommand {
	plain := func(t *testing.T, path string) { writeSession(t, path, faultSession(&builder{})) }
	torn := func(t *testing.T, path string) {
		// A line another writer left unfinished must be fenced, not glued.
		writeSession(t, path, append(faultSession(&builder{}), `{"type":"message","id":"torn`...))
	}
	return []faultCommand{
		{name: "label", setup: torn, run: func(s *files.Session) error {
			_, err := s.Append(session.Draft{Type: session.TypeLabel, Fields: map[string]any{"targetId": "00000001", "label": "x"}})
			return err
		}},
		{name: "navigate", setup: plain, run: func(s *files.Session) error {
			p := "00000001"
			_, err := s.Append(session.Draft{Type: session.TypeBranchSummary, Parent: &p, Fields: map[string]any{"fromId": "00000007", "summary": "S"}})
			return err
		}},
		{name: "compact", setup: plain, run: func(s *files.Session) error {
			prep, err := Prepare(s.Tree().Path(s.Leaf()), Settings{ReserveTokens: 1000, KeepRecentTokens: 100})
			if err != nil {
				return err
			}
			prep.FileEntries = len(s.Tree().Entries)
			res := &Result{Summary: "SUM", FirstKeptEntryID: prep.FirstKeptEntryID, TokensBefore: prep.TokensBefore}
			_, _, err = Persist(s, prep, res, false, nil)
			return err
		}},
		{name: "compact+message", setup: plain, run: func(s *files.Session) error {
			// A compaction with the message that follows it in the same
			// write (files read back, a plugin's message): several lines.
			prep, err := Prepare(s.Tree().Path(s.Leaf()), Settings{ReserveTokens: 1000, KeepRecentTokens: 100})
			if err != nil {
				return err
			}
			prep.FileEntries = len(s.Tree().Entries)
			res := &Result{Summary: "SUM", FirstKeptEntryID: prep.FirstKeptEntryID, TokensBefore: prep.TokensBefore}
			msg := session.Draft{Type: session.TypeCustomMessage, Fields: map[string]any{"customType": "pith.rehydrate", "content": "FILES", "display": false}}
			_, _, err = Persist(s, prep, res, false, nil, msg)
			return err
		}},
		{name: "prune", rewrites: true, setup: func(t *testing.T, path string) {
			// An archive with an old record and a torn tail (a full disk
			// once tore it): repaired, never glued onto.
			plain(t, path)
			writeSession(t, ArchivePath(path), []byte(`{"pos":0,"id":"x"`))
		}, run: func(s *files.Session) error {
			_, err := Prune(s, pruneSettings, faultNow)
			return err
		}},
		{name: "restore", rewrites: true, setup: func(t *testing.T, path string) {
			plain(t, path)
			s, err := files.Open(path, files.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if p, err := Prune(s, pruneSettings, faultNow); err != nil || len(p.Items) == 0 {
				t.Fatalf("setup prune: %+v %v", p, err)
			}
		}, run: func(s *files.Session) error {
			_, err := Restore(s)
			return err
		}},
		{name: "migrate", rewrites: true, setup: func(t *testing.T, path string) {
			writeSession(t, path, bytes.Replace(faultSession(&builder{}), []byte(`"version":3`), []byte(`"version":2`), 1))
		}, run: func(s *files.Session) error {
			_, err := s.Migrate()
			return err
		}},
	}
}

type snapshot struct{ session, archive []byte }

func snap(t *testing.T, path string) snapshot {
	t.Helper()
	s, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(ArchivePath(path))
	return snapshot{s, a}
}

// runCommand opens path through c and runs cmd on it.
func runCommand(path string, c *faultfs.Counter, cmd faultCommand) error {
	s, err := files.Open(path, files.Options{Now: func() time.Time { return faultNow }, Random: detRandom(), WrapFS: c.Wrap})
	if err != nil {
		return err
	}
	defer s.Close()
	return cmd.run(s)
}

// TestFaultEveryOperation fails, for each command's path, every write,
// fsync, truncate, rename, create and directory sync in turn with ENOSPC
// and with EIO. After each: the session is either exactly as before or
// exactly what a run without faults makes; the error says "unchanged"
// only when it is; the archive holds every original it held and no torn
// record in the middle; the next run without faults succeeds and ends
// where a clean run ends, with no temp file left.
//
// It runs on a short name and on one of 250 bytes, whose temp files,
// archive and intent sidecar are named by a cut of it (session.SideName).
func TestFaultEveryOperation(t *testing.T) {
	for _, name := range []string{"s.jsonl", strings.Repeat("l", 250-len(".jsonl")) + ".jsonl"} {
		t.Run(fmt.Sprintf("%d-byte-name", len(name)), func(t *testing.T) { faultEveryOperation(t, name) })
	}
}

func faultEveryOperation(t *testing.T, name string) {
	for _, cmd := range faultCommands() {
		t.Run(cmd.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, name)
			cmd.setup(t, path)
			before := snap(t, path)
			counter := faultfs.New(faultfs.Fault{})
			if err := runCommand(path, counter, cmd); err != nil {
				t.Fatalf("clean run: %v", err)
			}
			want := snap(t, path)
			if bytes.Equal(want.session, before.session) {
				t.Fatal("the clean run changed nothing")
			}
			runs := 0
			for _, op := range faultfs.Ops() {
				for n := 1; n <= counter.Count(op); n++ {
					for _, errno := range []error{syscall.ENOSPC, syscall.EIO} {
						runs++
						checkFault(t, name, cmd, []faultfs.Fault{{Op: op, N: n, Err: errno}}, before, want)
					}
					// A full disk: this and every later one fails; and a
					// failure whose cutting back fails too.
					runs += 2
					checkFault(t, name, cmd, []faultfs.Fault{{Op: op, N: n, Err: syscall.ENOSPC, Sticky: true}}, before, want)
					checkFault(t, name, cmd, []faultfs.Fault{{Op: op, N: n, Err: syscall.ENOSPC}, {Op: faultfs.Truncate, N: 1, Err: syscall.EIO, Sticky: true}}, before, want)
				}
			}
			t.Logf("%s: %d faulty runs over %v", cmd.name, runs, opCounts(counter))
		})
	}
}

func opCounts(c *faultfs.Counter) string {
	var parts []string
	for _, op := range faultfs.Ops() {
		parts = append(parts, fmt.Sprintf("%v=%d", op, c.Count(op)))
	}
	return strings.Join(parts, " ")
}

func checkFault(t *testing.T, name string, cmd faultCommand, faults []faultfs.Fault, before, want snapshot) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, name)
	cmd.setup(t, path)
	fault := fmt.Sprint(faults)
	err := runCommand(path, faultfs.New(faults...), cmd)
	got := snap(t, path)
	unchangedClaim := errors.Is(err, session.ErrUnchanged)
	if unchangedClaim != (err != nil && strings.Contains(err.Error(), "unchanged")) {
		t.Fatalf("%v: the message and the error value disagree: %v", fault, err)
	}
	switch {
	case bytes.Equal(got.session, before.session):
		// A failed append cut back, a failed rewrite left the original.
		if err == nil {
			t.Fatalf("%v: no error, but the session did not change", fault)
		}
		if !unchangedClaim {
			t.Fatalf("%v: the session is unchanged but the error does not say so: %v", fault, err)
		}
	case bytes.Equal(got.session, want.session):
		if unchangedClaim {
			t.Fatalf("%v: the error says unchanged, but the change was made: %v", fault, err)
		}
	case !cmd.rewrites && bytes.HasPrefix(got.session, before.session):
		// Cutting back itself failed: the error must not claim unchanged.
		if err == nil || unchangedClaim {
			t.Fatalf("%v: partial append left, error %v", fault, err)
		}
	default:
		t.Fatalf("%v: the session is neither as before nor as wanted (err %v):\n%s", fault, err, got.session)
	}
	// The archive only grows by whole records (a torn one only at its end).
	if !bytes.HasPrefix(got.archive, before.archive[:completeRecords(before.archive)]) {
		t.Fatalf("%v: the archive lost records", fault)
	}
	if got.archive != nil {
		body := got.archive[:completeRecords(got.archive)]
		for i, l := range bytes.Split(bytes.TrimSuffix(body, []byte("\n")), []byte("\n")) {
			if len(l) > 0 && i > 0 {
				if _, perr := ParseArchiveRecord(l); perr != nil {
					t.Fatalf("%v: archive line %d: %v", fault, i+1, perr)
				}
			}
		}
	}
	// Nothing pruned is missing from both files.
	if cmd.name == "prune" && !bytes.Equal(got.session, before.session) {
		if _, res, err := RestoreFile(mustParse(t, got.session), got.archive); err != nil || res.Restored != 2 {
			t.Fatalf("%v: the archive cannot restore the pruned session: %+v %v", fault, res, err)
		}
	}
	// The next run succeeds and ends where a clean run ends.
	if err != nil {
		if err2 := runCommand(path, faultfs.New(faultfs.Fault{}), cmd); err2 != nil && !bytes.Equal(got.session, want.session) {
			t.Fatalf("%v: the next run failed: %v (first: %v)", fault, err2, err)
		}
		final := snap(t, path)
		if cmd.rewrites && !bytes.Equal(final.session, want.session) {
			t.Fatalf("%v: after the next run the session differs from a clean run's", fault)
		}
		if !cmd.rewrites && !bytes.HasPrefix(final.session, got.session[:bytes.LastIndexByte(got.session, '\n')+1]) {
			t.Fatalf("%v: the next append rewrote earlier bytes", fault)
		}
		if !cmd.rewrites {
			// No new damage: only the fragments the fault left are warned about.
			allowed := len(mustParse(t, append(bytes.Clone(got.session), '\n')).Warnings)
			if f := mustParse(t, final.session); len(f.Warnings) > allowed {
				t.Fatalf("%v: damaged lines after the next run: %v", fault, f.Warnings)
			}
		}
	}
	if cmd.rewrites {
		names, _ := filepath.Glob(filepath.Join(dir, session.SideStem(".", name, len(".tmp-")+16)+".tmp-*"))
		if len(names) > 0 && err == nil {
			t.Fatalf("%v: temp files left after a successful run: %v", fault, names)
		}
	}
}

func mustParse(t *testing.T, data []byte) *session.File {
	t.Helper()
	f, err := session.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	return f
}
