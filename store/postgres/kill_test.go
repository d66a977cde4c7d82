package postgres_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/pith-dev/pith/core/engine"
	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/core/summary"
	"github.com/pith-dev/pith/internal/pgtest"
	"github.com/pith-dev/pith/store"
	"github.com/pith-dev/pith/store/postgres"
	"github.com/pith-dev/pith/store/storetest"
	"github.com/pith-dev/pith/summarize/builtin"
)

// Child process roles, run by TestMain when the variable is set.
const (
	envChildURL = "PITH_TEST_PG_CHILD_URL"
	envChildTag = "PITH_TEST_PG_CHILD_TAG"
	batch       = 25 // entries per append: a batch is all there or not at all
)

// childAppender takes the session's lease (2 s), says so on stdout, then
// appends batches until killed.
func childAppender(url, tag string) int {
	ctx := context.Background()
	s, err := postgres.Open(ctx, url)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	l, err := s.AcquireLease(ctx, "k.jsonl", "host-"+tag, 2*time.Second)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println(l.Expires.UnixNano())
	for i := 0; ; i++ {
		f, err := s.Load(ctx, "k.jsonl")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		drafts := make([]session.Draft, batch)
		for j := range drafts {
			drafts[j] = session.Draft{Type: session.TypeCustom, Fields: map[string]any{"customType": "batch", "data": map[string]any{"batch": fmt.Sprintf("%s-%d", tag, i), "n": j}}}
		}
		if _, err := s.Append(ctx, "k.jsonl", store.LastID(f), drafts...); err != nil && !errors.Is(err, store.ErrConflict) {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
}

// TestKillMidAppend kills -9 two processes appending to one session, each
// after it took the lease: every batch is whole, the chain never forks,
// and the dead holder's lease is taken over once it expires.
func TestKillMidAppend(t *testing.T) {
	url := pgtest.NewDatabase(t)
	ctx := context.Background()
	s, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Create(ctx, "k.jsonl", []byte(storetest.Sample)); err != nil {
		t.Fatal(err)
	}
	var expires time.Time
	for round, tag := range []string{"a", "b"} {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), envChildURL+"="+url, envChildTag+"="+tag)
		cmd.Stderr = os.Stderr
		out, _ := cmd.StdoutPipe()
		if round == 1 {
			// b waits for a's lease, which a's death does not release.
			for {
				l, err := s.AcquireLease(ctx, "k.jsonl", "observer", time.Minute)
				if err == nil {
					if err := s.ReleaseLease(ctx, l); err != nil {
						t.Fatal(err)
					}
					break
				}
				if !errors.Is(err, store.ErrLeaseHeld) {
					t.Fatal(err)
				}
				time.Sleep(100 * time.Millisecond)
			}
			if time.Now().Before(expires) {
				t.Fatalf("the lease was taken over before it expired")
			}
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(out).ReadString('\n')
		if err != nil {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("child %s: %v", tag, err)
		}
		ns, _ := strconv.ParseInt(line[:len(line)-1], 10, 64)
		expires = time.Unix(0, ns)
		// Let it append for a while, then kill it wherever it is.
		time.Sleep(300 * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
	}
	f, err := s.Load(ctx, "k.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for i, e := range f.Entries[2:] {
		if e.ParentID != f.Entries[i+1].ID {
			t.Fatalf("entry %d forks", i+2)
		}
		counts[e.Get("data.batch").String()]++
	}
	if len(counts) == 0 {
		t.Fatal("the children appended nothing")
	}
	for b, n := range counts {
		if n != batch {
			t.Fatalf("batch %s has %d entries, want %d: a killed append was half-written", b, n, batch)
		}
	}
	t.Logf("%d whole batches from two killed appenders", len(counts))
}

// envChildRole picks the child's job: "" appends (childAppender),
// "compactor" runs childCompactor.
const envChildRole = "PITH_TEST_PG_CHILD_ROLE"

// childCompactor compacts c.jsonl through store.Session with a summarizer
// that says "summarizing" on stdout and then never returns: a host killed
// mid-compaction, holding the session's lease (TTL 2 s, renewed).
func childCompactor(url string) int {
	ctx := context.Background()
	s, err := postgres.Open(ctx, url)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	h, err := store.OpenSession(ctx, s, "c.jsonl", store.SessionOptions{Holder: "doomed", LeaseTTL: 2 * time.Second})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	hang := summary.Func(func(ctx context.Context, _ summary.Request) (summary.Result, error) {
		fmt.Println("summarizing")
		<-ctx.Done()
		return summary.Result{}, ctx.Err()
	})
	_, err = engine.New(h, engine.Options{Settings: storetest.CompactSettings(), Summarizer: hang}).Compact(ctx, "")
	fmt.Fprintln(os.Stderr, "the compaction returned:", err)
	return 1
}

// TestKillMidCompaction kills -9 a host in the middle of a compaction (its
// summary being made, the lease held): another host is refused with
// ErrCompactingElsewhere until the lease expires, then compacts; exactly
// one compaction is saved and nothing else changed.
func TestKillMidCompaction(t *testing.T) {
	url := pgtest.NewDatabase(t)
	ctx := context.Background()
	s, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Create(ctx, "c.jsonl", []byte(storetest.Sample)); err != nil {
		t.Fatal(err)
	}
	h, err := store.OpenSession(ctx, s, "c.jsonl", store.SessionOptions{Holder: "survivor", LeaseTTL: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 8 {
		m := map[string]any{"role": "user", "content": storetest.Prose(i, 1200), "timestamp": 1}
		if _, err := h.Append(session.Draft{Type: session.TypeMessage, Fields: map[string]any{"message": m}}); err != nil {
			t.Fatal(err)
		}
	}
	entries := len(h.File().Entries)

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envChildURL+"="+url, envChildRole+"=compactor")
	cmd.Stderr = os.Stderr
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "summarizing\n" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child: %q, %v", line, err)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	killed := time.Now()

	eng := engine.New(h, engine.Options{Summarizer: builtin.New(builtin.Options{}), Settings: storetest.CompactSettings()})
	refused := 0
	for {
		_, err := eng.Compact(ctx, "")
		if err == nil {
			break
		}
		if !errors.Is(err, engine.ErrCompactingElsewhere) {
			t.Fatalf("compaction after the kill: %v", err)
		}
		refused++
		if time.Since(killed) > time.Minute {
			t.Fatal("the dead host's lease was never taken over")
		}
		time.Sleep(100 * time.Millisecond)
	}
	f, err := s.Load(ctx, "c.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	compactions := 0
	for _, e := range f.Entries {
		if e.Type == session.TypeCompaction {
			compactions++
		}
	}
	if compactions != 1 || len(f.Entries) < entries+1 {
		t.Fatalf("%d compactions and %d entries (had %d), want exactly one compaction added", compactions, len(f.Entries), entries)
	}
	t.Logf("taken over %v after the kill, %d attempts refused meanwhile", time.Since(killed).Round(100*time.Millisecond), refused)
}
