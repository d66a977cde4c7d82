package pi_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// pithServe is a running `pith serve` on a unix socket, its log kept.
type pithServe struct {
	addr string
	cmd  *exec.Cmd
	mu   sync.Mutex
	log  bytes.Buffer
	more chan struct{}
}

// startServe runs `pith serve` on w's configuration (sessions.root = pi's
// session directory) and waits until it serves.
func (w *world) startServe() *pithServe {
	t := w.t
	t.Helper()
	sock := filepath.Join(w.dir, "pith.sock")
	ready := filepath.Join(w.dir, "ready")
	cmd := exec.Command(w.pith, "serve", "--config", w.pithConfig, "--listen", "unix:"+sock, "--ready-file", ready)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + w.home, "TMPDIR=" + w.dir}
	s := &pithServe{addr: "unix:" + sock, cmd: cmd, more: make(chan struct{}, 1)}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			s.mu.Lock()
			s.log.WriteString(sc.Text() + "\n")
			s.mu.Unlock()
			select {
			case s.more <- struct{}{}:
			default:
			}
		}
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	})
	for range 600 {
		if _, err := os.Stat(ready); err == nil {
			return s
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("pith serve did not start:\n%s", s.logText())
	return nil
}

func (s *pithServe) logText() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.log.String()
}

// awaitLog waits for the n-th log line containing sub.
func (s *pithServe) awaitLog(t testing.TB, sub string, n int) {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for strings.Count(s.logText(), sub) < n {
		select {
		case <-s.more:
		case <-deadline:
			t.Fatalf("no %q in pith serve's log:\n%s", sub, s.logText())
		}
	}
}

// TestDaemon: with PITH_SERVE pi's compactions go to a running `pith
// serve` (its Propose RPC), and an edit of the daemon's configuration
// applies to the next compaction of the pi already running.
func TestDaemon(t *testing.T) {
	w := newWorld(t, piSettings{})
	record := filepath.Join(w.dir, "notes.jsonl")
	watcher := w.plugin("watcher", "scripted", "--name", "watcher", "--compact", "record", "--record", record)
	w.pithConf(nil, watcher)
	conf := map[string]any{}
	readJSONFile(t, w.pithConfig, &conf)
	conf["sessions"] = map[string]any{"root": w.sessions}
	writeJSON(t, w.pithConfig, conf)
	srv := w.startServe()
	w.env = []string{"PITH_SERVE=" + srv.addr, "PITH_SESSIONS_ROOT=" + w.sessions, "PITH_BIN=" + filepath.Join(w.dir, "no-such-pith")}
	pi := w.startRPC()
	pi.converse(3)
	r := pi.send(map[string]any{"type": "compact"})
	data, _ := r["data"].(map[string]any)
	if summary, _ := data["summary"].(string); r["success"] != true || !strings.Contains(summary, "PITH-SUMMARY") {
		t.Fatalf("compact through the daemon: %v\nnotices: %q\nlog:\n%s", r, pi.notices(), srv.logText())
	}
	if notes := readLines(t, record); !containsLine(notes, "session_compact") {
		t.Fatalf("the daemon's plugin was not told of the compaction: %q", notes)
	}

	// A veto added to the daemon's configuration while pi runs.
	conf["plugins"] = []any{watcher, w.plugin("keeper", "scripted", "--name", "keeper", "--before-compact", "cancel")}
	reloads := strings.Count(srv.logText(), "config reloaded")
	tmp := w.pithConfig + ".new"
	writeJSON(t, tmp, conf)
	if err := os.Rename(tmp, w.pithConfig); err != nil {
		t.Fatal(err)
	}
	srv.awaitLog(t, "config reloaded", reloads+1)
	pi.converse(2)
	r = pi.send(map[string]any{"type": "compact"})
	if r["success"] != false || !containsLine(pi.notices(), "keeper says no") {
		t.Fatalf("the edited configuration did not apply: %v\nnotices: %q", r, pi.notices())
	}
	file := pi.sessionFile()
	pi.stop()
	if comps := ofType(w.checkFile(file), "compaction"); len(comps) != 1 {
		t.Fatalf("%d compactions", len(comps))
	}

	// Escape during the daemon's work: the call is cancelled, the daemon
	// stops its summarizer request, and nothing is written.
	conf["plugins"] = []any{watcher}
	reloads = strings.Count(srv.logText(), "config reloaded")
	writeJSON(t, tmp, conf)
	if err := os.Rename(tmp, w.pithConfig); err != nil {
		t.Fatal(err)
	}
	srv.awaitLog(t, "config reloaded", reloads+1)
	before, _ := os.ReadFile(file)
	w.summarizer.mu.Lock()
	w.summarizer.hold = true
	w.summarizer.mu.Unlock()
	pr, pw := io.Pipe()
	done := make(chan map[string]any, 1)
	go func() { done <- w.sdk("abort", map[string]any{"file": file}, pr) }()
	<-w.summarizer.arrived
	io.WriteString(pw, "go\n")
	pw.Close()
	<-w.summarizer.gone
	if r := <-done; r["ok"] != false || !strings.Contains(fmt.Sprint(r["error"]), "cancelled") {
		t.Fatalf("abort: %v", r)
	}
	if after, _ := os.ReadFile(file); string(after) != string(before) {
		t.Fatal("the file changed after an aborted compaction")
	}
}
