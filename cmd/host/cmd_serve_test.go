package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pith-dev/pith/client"
	"github.com/pith-dev/pith/internal/testtmp"
	"github.com/tidwall/gjson"
)

// TestServeHelperProcess is `pith serve` when the test binary runs itself
// as a subprocess (PITH_SERVE_HELPER=1); it is skipped otherwise. The
// command is run directly, so the test does not depend on main.go's
// command list.
func TestServeHelperProcess(t *testing.T) {
	if os.Getenv("PITH_SERVE_HELPER") != "1" {
		t.Skip("helper process for the serve tests")
	}
	args := os.Args
	for i, a := range args {
		if a == "--" {
			args = args[i+1:]
			break
		}
	}
	cmd := newServeCommand()
	// As the root command does: errors are printed once, below.
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	cmd.SetArgs(args)
	if err := cmd.Execute(); err != nil {
		fmt.Fprintf(os.Stderr, "pith: %v\n", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// serveProc is a running `pith serve` subprocess.
type serveProc struct {
	cmd  *exec.Cmd
	addr string
	// viewer is the viewer's URL (serveOptions.viewer).
	viewer string
	mu     sync.Mutex
	logs   []string
	// seen gets every stderr line.
	seen chan string
	done chan struct{}
}

// startServe starts `pith serve --config cfg` on a free loopback port and
// waits for it to print the bound address; extra flags come last (a later
// --listen wins).
func startServe(t *testing.T, cfg string, extra ...string) *serveProc {
	t.Helper()
	return startServeWith(t, serveOptions{}, cfg, extra...)
}

// serveOptions are how startServeWith starts the daemon.
type serveOptions struct {
	// ulimit, when set, is run by the shell before the daemon: "-n 1024"
	// (soft and hard limit of descriptors), "-Sn 512" (soft only).
	ulimit string
	// viewer: the configuration has server.viewer; wait for its URL.
	viewer bool
}

func startServeWith(t *testing.T, o serveOptions, cfg string, extra ...string) *serveProc {
	t.Helper()
	args := append([]string{"-test.run=^TestServeHelperProcess$", "--", "--config", cfg, "--listen", "127.0.0.1:0"}, extra...)
	cmd := exec.Command(os.Args[0], args...)
	if o.ulimit != "" {
		// exec: the shell becomes the daemon, same pid.
		cmd = exec.Command("/bin/sh", append([]string{"-c", `ulimit ` + o.ulimit + ` && exec "$0" "$@"`, os.Args[0]}, args...)...)
	}
	cmd.Env = append(os.Environ(), "PITH_SERVE_HELPER=1")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &serveProc{cmd: cmd, seen: make(chan string, 1024), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			p.mu.Lock()
			p.logs = append(p.logs, sc.Text())
			p.mu.Unlock()
			select {
			case p.seen <- sc.Text():
			default:
			}
		}
	}()
	t.Cleanup(func() {
		// SIGTERM, the way a user stops the daemon: it stops its plugins
		// and go-plugin removes their socket directories, which a SIGKILL
		// left in TMPDIR. The kill is only for a daemon that hangs.
		_ = cmd.Process.Signal(syscall.SIGTERM)
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			t.Logf("pith serve still running 30 s after SIGTERM; killing it")
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("pith serve log:\n%s", p.log())
		}
	})
	out := bufio.NewReader(stdout)
	line, err := out.ReadString('\n')
	if err != nil {
		<-p.done
		t.Fatalf("pith serve did not start: %v\n%s", err, p.log())
	}
	p.addr = strings.TrimSpace(strings.TrimPrefix(line, "listening on "))
	if o.viewer {
		line, err := out.ReadString('\n')
		if err != nil || !strings.HasPrefix(line, "viewer on ") {
			t.Fatalf("pith serve printed %q (%v), want the viewer's URL", line, err)
		}
		p.viewer = strings.TrimSpace(strings.TrimPrefix(line, "viewer on "))
	}
	go func() { _, _ = io.Copy(io.Discard, out) }()
	return p
}

func (p *serveProc) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.logs, "\n")
}

// waitLog waits for a stderr line containing s; the limit only keeps a
// broken daemon from hanging the test.
func (p *serveProc) waitLog(t *testing.T, s string) {
	t.Helper()
	limit := time.After(30 * time.Second)
	for {
		select {
		case line := <-p.seen:
			if strings.Contains(line, s) {
				return
			}
		case <-p.done:
			t.Fatalf("pith serve exited before logging %q", s)
		case <-limit:
			t.Fatalf("pith serve never logged %q", s)
		}
	}
}

func writeServeConfig(t *testing.T, path string, keepRecent int, plugins []map[string]any) {
	t.Helper()
	cfg := map[string]any{
		"contextWindow": 6000,
		"compaction":    map[string]any{"reserveTokens": 2000, "keepRecentTokens": keepRecent},
		"sessions":      map[string]any{"root": "sessions"},
		"server":        map[string]any{"shutdownTimeout": "5s"},
		"plugins":       plugins,
	}
	data, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Write then rename, as editors do; the watcher follows either way.
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func serveMessage(role, tag string, words int) json.RawMessage {
	text := tag + " " + strings.Repeat("word ", words)
	extra := ""
	if role == "assistant" {
		extra = `,"provider":"test","model":"m1","stopReason":"stop"`
	}
	// A current timestamp: an answer stamped before the last compaction is
	// stale and does not count towards the threshold.
	return json.RawMessage(fmt.Sprintf(`{"role":%q,"content":[{"type":"text","text":%q}],"timestamp":%d%s}`, role, text, time.Now().UnixMilli(), extra))
}

// turnsUntilCompaction runs turns of ~240 tokens until AfterTurn compacts.
func turnsUntilCompaction(t *testing.T, ctx context.Context, s *client.Session) *client.Compaction {
	t.Helper()
	for i := 0; i < 60; i++ {
		if _, err := s.AppendMessages(ctx, serveMessage("user", fmt.Sprintf("u%d", i), 120)); err != nil {
			t.Fatal(err)
		}
		out, err := s.AfterTurn(ctx, serveMessage("assistant", fmt.Sprintf("a%d", i), 120))
		if err != nil {
			t.Fatal(err)
		}
		if out.Err != "" {
			t.Fatal(out.Err)
		}
		if out.Skipped != "" {
			t.Logf("turn %d: compaction skipped: %s", i, out.Skipped)
		}
		if out.Compaction != nil {
			if out.Action != client.ActionContinue {
				t.Errorf("threshold compaction: action %v, want continue", out.Action)
			}
			return out.Compaction
		}
	}
	c, err := s.Context(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Fatalf("no threshold compaction after 60 turns (context: %d tokens, %d messages)", c.Tokens, len(c.Messages))
	return nil
}

// keptMessages counts the messages kept verbatim after the compaction
// summary at the start of the context.
func keptMessages(t *testing.T, ctx context.Context, s *client.Session) int {
	t.Helper()
	c, err := s.Context(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Messages) == 0 || gjson.GetBytes(c.Messages[0], "role").Str != "compactionSummary" {
		t.Fatalf("context does not start with a compaction summary")
	}
	return len(c.Messages) - 1
}

func TestServeEndToEnd(t *testing.T) {
	_, audit := buildExamplePlugins(t)
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "pith.json")
	auditLog := filepath.Join(dir, "audit.jsonl")
	plugins := []map[string]any{{"name": "audit", "path": audit, "args": []string{"--file", auditLog}}}
	writeServeConfig(t, cfgPath, 1200, plugins)
	p := startServe(t, cfgPath)

	c, err := client.Dial(p.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	s, err := c.Create(ctx, "e2e/session.jsonl", "/work")
	if err != nil {
		t.Fatal(err)
	}
	w, err := s.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()

	first := turnsUntilCompaction(t, ctx, s)
	keptBefore := keptMessages(t, ctx, s)
	for _, want := range []string{"compaction_start", "compaction_end"} {
		ev, err := w.Next()
		for err == nil && ev.Kind == "entries_appended" { // every turn's
			ev, err = w.Next()
		}
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind != want || ev.Reason != "threshold" {
			t.Fatalf("event %+v, want %s (threshold)", ev, want)
		}
		if want == "compaction_end" && (ev.EntryID != first.EntryID || ev.Error != "") {
			t.Fatalf("end event %+v for compaction %s", ev, first.EntryID)
		}
	}

	// Keep less of the recent conversation from now on, without a restart.
	writeServeConfig(t, cfgPath, 300, plugins)
	p.waitLog(t, "config reloaded")
	second := turnsUntilCompaction(t, ctx, s)
	keptAfter := keptMessages(t, ctx, s)
	if keptAfter >= keptBefore || second.TokensAfter >= first.TokensAfter {
		t.Errorf("keepRecentTokens 1200 → 300: kept %d → %d messages, %d → %d tokens after compaction",
			keptBefore, keptAfter, first.TokensAfter, second.TokensAfter)
	}
	t.Logf("kept %d → %d messages, tokens after %d → %d", keptBefore, keptAfter, first.TokensAfter, second.TokensAfter)

	// An invalid file is rejected and the daemon carries on.
	if err := os.WriteFile(cfgPath, []byte(`{"compaction":{"reserveTokens":-1}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	p.waitLog(t, "config rejected")
	if _, err := s.Context(ctx); err != nil {
		t.Fatal(err)
	}

	// Graceful shutdown: the watch ends, the process exits 0, the plugin
	// is gone and the audit plugin saw both compactions.
	pluginPIDs := childPIDs(p.cmd.Process.Pid)
	if len(pluginPIDs) == 0 {
		t.Fatal("no plugin process under pith serve")
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Next(); err != io.EOF && err != nil && !strings.Contains(err.Error(), "unavailable") {
		t.Errorf("watch after shutdown: %v", err)
	}
	<-p.done
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("pith serve exit: %v\n%s", err, p.log())
	}
	for _, pid := range pluginPIDs {
		if alive(pid) {
			t.Errorf("plugin pid %d still running after shutdown", pid)
		}
	}
	data, err := os.ReadFile(auditLog)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), "\n"); n < 2 {
		t.Errorf("audit log has %d lines, want one per compaction (2)", n)
	}
}

// TestServeKilledLeavesNoPlugin SIGKILLs `pith serve` and checks that its
// plugin process goes too (the SDK's parent-death watchdog).
func TestServeKilledLeavesNoPlugin(t *testing.T) {
	// The killed daemon cannot remove go-plugin's socket directory
	// (plugin-dir*): it goes in a TMPDIR of the test's own.
	t.Setenv("TMPDIR", testtmp.Short(t))
	_, audit := buildExamplePlugins(t)
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "pith.json")
	writeServeConfig(t, cfgPath, 800, []map[string]any{{"name": "audit", "path": audit, "args": []string{"--file", filepath.Join(dir, "a.jsonl")}}})
	p := startServe(t, cfgPath)
	pids := childPIDs(p.cmd.Process.Pid)
	if len(pids) == 0 {
		t.Fatal("no plugin process under pith serve")
	}
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = p.cmd.Wait()
	killed := time.Now()
	// The limit is generous for a loaded CI machine; the time taken is
	// logged against the 2 s the design asks for.
	for _, pid := range pids {
		for alive(pid) {
			if time.Since(killed) > 10*time.Second {
				t.Fatalf("plugin pid %d still running 10 s after pith serve was killed", pid)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	t.Logf("plugin gone %s after SIGKILL of pith serve", time.Since(killed).Round(time.Millisecond))
}

// childPIDs lists the processes whose parent is pid (from /proc).
func childPIDs(pid int) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, _ := procStat(n); ppid == pid {
			out = append(out, n)
		}
	}
	return out
}

// procStat returns the parent pid and state of pid, or 0 and "" when it
// does not exist.
func procStat(pid int) (ppid int, state string) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, ""
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, ""
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0, ""
	}
	ppid, _ = strconv.Atoi(f[1])
	return ppid, f[0]
}

// alive reports whether pid runs; a zombie (dead, not yet reaped by its
// new parent) counts as gone.
func alive(pid int) bool {
	_, state := procStat(pid)
	return state != "" && state != "Z"
}

// TestServeMetricsRefusesForeignHost: /metrics on loopback takes
// anonymous requests, so it answers only to a Host that is loopback by
// definition — a web page rebinding a name of its own to 127.0.0.1 must
// not read the daemon's series (its sessions, calls, plugins). Before, it
// answered any Host.
func TestServeMetricsRefusesForeignHost(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "pith.json")
	writeServeConfig(t, cfg, 800, nil)
	p := startServe(t, cfg, "--metrics", "127.0.0.1:0")
	p.waitLog(t, "metrics: address=")
	var url string
	for _, line := range strings.Split(p.log(), "\n") {
		if _, after, ok := strings.Cut(line, "metrics: address="); ok {
			url = strings.TrimSpace(after)
		}
	}
	get := func(host string) int {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get("rebind.example"); code != http.StatusMisdirectedRequest {
		t.Errorf("GET /metrics with Host rebind.example: %d, want 421", code)
	}
	if code := get(""); code != http.StatusOK {
		t.Errorf("GET %s: %d, want 200", url, code)
	}
}
