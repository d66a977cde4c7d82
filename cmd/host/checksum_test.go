package main

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/pith-dev/pith/internal/testproc"
	"github.com/pith-dev/pith/sdk/sdktest"
)

// wrongSum is a well-formed sha256 no plugin binary has.
var wrongSum = strings.Repeat("ab", 32)

// TestChecksumMismatchStopsTheCommand: a real plugin binary configured
// with a wrong sha256 stops compact and navigate before anything is
// written, whatever its failure policy and whichever stretch of the
// operation it would have run in (first event, a later one, unknown
// events), with one line naming the plugin, the file and both sums.
// Before, a plugin with failure: open was left out and the operation
// went on without its veto.
func TestChecksumMismatchStopsTheCommand(t *testing.T) {
	bin, err := sdktest.BuildTo(t.TempDir(), "github.com/pith-dev/pith/internal/testplugins/scripted")
	if err != nil {
		t.Fatal(err)
	}
	real := fileSum(t, bin)
	tmp, err := os.MkdirTemp("", "pt")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	t.Setenv("TMPDIR", tmp)
	for _, tc := range []struct {
		name    string
		command []string
		events  []string
		failure string
		args    []string
	}{
		{"compact, first event, open", []string{"compact", "--keep-recent-tokens", "2000"}, []string{"session_before_compact"}, "open", []string{"-before-compact", "cancel"}},
		{"compact, first event, closed", []string{"compact", "--keep-recent-tokens", "2000"}, []string{"session_before_compact"}, "closed", []string{"-before-compact", "cancel"}},
		{"compact, last event, open", []string{"compact", "--keep-recent-tokens", "2000"}, []string{"session_compact"}, "open", []string{"-compact", "record"}},
		{"compact, events unknown, open", []string{"compact", "--keep-recent-tokens", "2000"}, nil, "open", []string{"-before-compact", "cancel"}},
		{"navigate, open", []string{"navigate", "--to", "59fdc8cc", "--summarize"}, []string{"session_before_tree"}, "open", []string{"-before-tree", "cancel"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := copyFile(t, "../../examples/demo-session.jsonl")
			before, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			plugin := map[string]any{"name": "guard", "path": bin, "sha256": wrongSum, "failure": tc.failure, "args": tc.args}
			if tc.events != nil {
				plugin["events"] = tc.events
			}
			cfg := writeConfig(t, plugin)
			_, stderr, code := runCLI(t, append(append(tc.command, "--config", cfg), path)...)
			if code == 0 {
				t.Fatalf("exit 0 with a binary that does not match its sha256; stderr:\n%s", stderr)
			}
			lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
			if len(lines) != 1 {
				t.Errorf("%d lines on stderr, want one:\n%s", len(lines), stderr)
			}
			for _, want := range []string{`plugin "guard"`, bin, "sha256 " + real, "says " + wrongSum} {
				if !strings.Contains(lines[len(lines)-1], want) {
					t.Errorf("the error line lacks %q:\n%s", want, stderr)
				}
			}
			after, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(before, after) {
				t.Error("the session was written to")
			}
			testproc.RequireNoChildren(t)
		})
	}
	if left, _ := os.ReadDir(tmp); len(left) > 0 {
		t.Errorf("left in TMPDIR: %d files", len(left))
	}
}

// TestServeRefusesMismatchingPlugin: pith serve does not start with a
// plugin whose binary does not match its sha256 (failure: open or not),
// and refuses a reload that brings one, keeping the plugins in force;
// each time with the one line naming the plugin and both sums.
func TestServeRefusesMismatchingPlugin(t *testing.T) {
	bin, err := sdktest.BuildTo(t.TempDir(), "github.com/pith-dev/pith/internal/testplugins/scripted")
	if err != nil {
		t.Fatal(err)
	}
	real := fileSum(t, bin)
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "pith.json")
	bad := []map[string]any{{"name": "guard", "path": bin, "sha256": wrongSum, "failure": "open", "args": []string{"-before-compact", "cancel"}}}
	writeServeConfig(t, cfgPath, 1200, bad)
	cmd := exec.Command(os.Args[0], "-test.run=^TestServeHelperProcess$", "--", "--config", cfgPath, "--listen", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "PITH_SERVE_HELPER=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The first line is the address once it listens; a daemon that
	// refuses to start prints none and exits.
	line, _ := bufio.NewReader(out).ReadString('\n')
	if line != "" {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		t.Fatalf("pith serve started with a mismatching plugin: %s", line)
	}
	if err := cmd.Wait(); err == nil {
		t.Fatal("pith serve exited 0 with a mismatching plugin")
	}
	last := lastLine(stderr.String())
	for _, want := range []string{`plugin "guard"`, "sha256 " + real, "says " + wrongSum} {
		if !strings.Contains(last, want) {
			t.Errorf("the last line lacks %q:\n%s", want, stderr.String())
		}
	}

	good := []map[string]any{{"name": "guard", "path": bin, "sha256": real, "failure": "open", "args": []string{"-before-compact", "none"}}}
	writeServeConfig(t, cfgPath, 1200, good)
	p := startServe(t, cfgPath)
	pids := childPIDs(p.cmd.Process.Pid)
	if len(pids) != 1 {
		t.Fatalf("plugin processes %v, want one", pids)
	}
	// The same plugin with new arguments (so it must start again), and a
	// wrong sum.
	bad[0]["args"] = []string{"-before-compact", "cancel"}
	writeServeConfig(t, cfgPath, 1200, bad)
	p.waitLog(t, "says "+wrongSum)
	log := p.log()
	var refusal string
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, "says "+wrongSum) {
			refusal = l
		}
	}
	for _, want := range []string{"guard", "sha256 " + real} {
		if !strings.Contains(refusal, want) {
			t.Errorf("the refusal lacks %q: %s", want, refusal)
		}
	}
	if strings.Contains(log, "config reloaded") {
		t.Errorf("the reload was applied:\n%s", log)
	}
	if now := childPIDs(p.cmd.Process.Pid); len(now) != 1 || now[0] != pids[0] {
		t.Errorf("plugin processes %v after the refused reload, want %v still running", now, pids)
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}
