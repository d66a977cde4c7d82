package pi_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pith-dev/pith/internal/testtmp"
)

// requirePi returns pi's CLI script, skipping the test when node or the
// pinned packages are missing — and failing under CI, where .ci/run
// installs them.
func requirePi(t testing.TB) string {
	t.Helper()
	missing := func(why string) {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s: under CI the pi extension's tests must run (.ci/run runs npm ci in integrations/pi)", why)
		}
		t.Skip(why)
	}
	if _, err := exec.LookPath("node"); err != nil {
		missing("node is not installed")
	}
	cli, err := filepath.Abs(filepath.Join("node_modules", "@mariozechner", "pi-coding-agent", "dist", "cli.js"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(cli); err != nil {
		missing("pi is not installed (cd integrations/pi && npm ci)")
	}
	return cli
}

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
)

// TestMain removes the binaries built for the tests.
func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// binaries builds pith and the plugins the tests attach (the five examples
// and the scripted test plugin) once per run. PITH_PI_TEST_PITH names a pith
// binary to use instead of building ./cmd/host.
func binaries(t testing.TB) (pith, plugins string) {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "pith-pi-bin")
		if buildErr != nil {
			return
		}
		pkgs := []string{"github.com/pith-dev/pith/internal/testplugins/scripted"}
		for _, p := range []string{"audit", "branch-notes", "enterprise-summarizer", "guard", "instructions-keeper"} {
			pkgs = append(pkgs, "github.com/pith-dev/pith/plugins/examples/"+p)
		}
		if os.Getenv("PITH_PI_TEST_PITH") == "" {
			pkgs = append(pkgs, "github.com/pith-dev/pith/cmd/host")
		}
		cmd := exec.Command("go", append([]string{"build", "-o", buildDir + string(filepath.Separator)}, pkgs...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	pith = filepath.Join(buildDir, "host")
	if p := os.Getenv("PITH_PI_TEST_PITH"); p != "" {
		pith = p
	}
	return pith, buildDir
}

// world is one pi installation: its agent directory (settings, models,
// sessions), HOME, the project directory it runs in, the two model servers
// and Pith's configuration.
type world struct {
	t          testing.TB
	dir        string
	agentDir   string
	home       string
	cwd        string
	sessions   string
	piCLI      string
	pith       string
	plugins    string
	pithConfig string
	model      *modelServer
	summarizer *summarizerServer
	// env is added to pi's environment (PITH_* settings of a test).
	env []string
	// installed: the extension is a pi package installed in the agent
	// directory (`pi install`), not loaded with -e.
	installed bool
}

// install installs this directory as a pi package in w's agent
// directory, as a user does (`pi install ./integrations/pi`).
func (w *world) install() {
	w.t.Helper()
	dir, err := filepath.Abs(".")
	if err != nil {
		w.t.Fatal(err)
	}
	cmd := exec.Command("node", w.piCLI, "install", dir)
	cmd.Dir = w.cwd
	cmd.Env = w.piEnv()
	if out, err := cmd.CombinedOutput(); err != nil {
		w.t.Fatalf("pi install: %v\n%s", err, out)
	}
	var settings struct{ Packages []any }
	readJSONFile(w.t, filepath.Join(w.agentDir, "settings.json"), &settings)
	if len(settings.Packages) != 1 {
		w.t.Fatalf("pi install left packages %v in settings.json", settings.Packages)
	}
	w.installed = true
}

type piSettings struct {
	contextWindow    int
	reserveTokens    int
	keepRecentTokens int
}

func newWorld(t testing.TB, ps piSettings) *world {
	t.Helper()
	cli := requirePi(t)
	pith, plugins := binaries(t)
	dir := testtmp.Short(t)
	w := &world{t: t, dir: dir, piCLI: cli, pith: pith, plugins: plugins,
		agentDir: filepath.Join(dir, "agent"), home: filepath.Join(dir, "home"), cwd: filepath.Join(dir, "project"),
		sessions: filepath.Join(dir, "sessions"), model: newModelServer(t), summarizer: newSummarizerServer(t)}
	for _, d := range []string{w.agentDir, w.home, w.cwd, w.sessions} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if ps.contextWindow == 0 {
		ps = piSettings{contextWindow: 100000, reserveTokens: 2000, keepRecentTokens: 150}
	}
	writeJSON(t, filepath.Join(w.agentDir, "models.json"), map[string]any{"providers": map[string]any{
		"loop": map[string]any{
			"baseUrl": w.model.URL, "api": "openai-completions", "apiKey": "loop-key",
			"compat": map[string]any{"supportsDeveloperRole": false, "supportsReasoningEffort": false},
			"models": []any{map[string]any{"id": "loop-model", "name": "Loopback", "reasoning": false, "input": []string{"text"},
				"contextWindow": ps.contextWindow, "maxTokens": 1000,
				"cost": map[string]any{"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}}},
		}}})
	writeJSON(t, filepath.Join(w.agentDir, "settings.json"), map[string]any{
		"compaction":             map[string]any{"enabled": true, "reserveTokens": ps.reserveTokens, "keepRecentTokens": ps.keepRecentTokens},
		"retry":                  map[string]any{"enabled": false},
		"quietStartup":           true,
		"enableInstallTelemetry": false,
	})
	return w
}

// pithConf writes Pith's configuration: the loopback summarizer, small
// budgets for small sessions, and the plugins given.
func (w *world) pithConf(compaction map[string]any, plugins ...map[string]any) {
	c := map[string]any{"keepRecentTokens": 150, "reserveTokens": 2000, "calibrateKeepRecent": false}
	for k, v := range compaction {
		c[k] = v
	}
	if plugins == nil {
		plugins = []map[string]any{}
	}
	w.pithConfig = filepath.Join(w.dir, "pith.json")
	writeJSON(w.t, w.pithConfig, map[string]any{
		"summarizer": map[string]any{"provider": "openai", "baseUrl": w.summarizer.URL, "model": "summarizer-model"},
		"compaction": c,
		"plugins":    plugins,
	})
}

// plugin is a plugins entry for one of the built binaries.
func (w *world) plugin(name, bin string, args ...string) map[string]any {
	if args == nil {
		args = []string{}
	}
	return map[string]any{"name": name, "path": filepath.Join(w.plugins, bin), "args": args, "timeout": "60s"}
}

// piEnv is pi's whole environment: nothing of the machine's beyond PATH.
func (w *world) piEnv() []string {
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + w.home,
		"TMPDIR=" + w.dir,
		"PI_CODING_AGENT_DIR=" + w.agentDir,
		"PI_OFFLINE=1",
		"PI_SKIP_VERSION_CHECK=1",
		"PI_TELEMETRY=0",
		"PITH_BIN=" + w.pith,
	}
	if w.pithConfig != "" {
		env = append(env, "PITH_CONFIG="+w.pithConfig)
	}
	// With PITH_PI_TEST_PITH naming another tree's pith, its proto files.
	if d := os.Getenv("PITH_PROTO_DIR"); d != "" {
		env = append(env, "PITH_PROTO_DIR="+d)
	}
	return append(env, w.env...)
}

func (w *world) extension() string {
	p, err := filepath.Abs("index.ts")
	if err != nil {
		w.t.Fatal(err)
	}
	return p
}

// rpcPi is pi running in RPC mode: commands on stdin, events on stdout.
type rpcPi struct {
	t      testing.TB
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	mu     sync.Mutex
	events []map[string]any
	lines  []string
	more   chan struct{}
	stderr bytes.Buffer
	done   chan struct{}
	nextID int
}

func (w *world) startRPC(extraArgs ...string) *rpcPi {
	t := w.t
	args := []string{w.piCLI, "--mode", "rpc", "--offline", "--provider", "loop", "--model", "loop-model",
		"--session-dir", w.sessions, "--no-tools", "--no-skills", "--no-context-files", "--no-prompt-templates", "--no-themes"}
	if !w.installed {
		args = append(args, "-e", w.extension())
	}
	args = append(args, extraArgs...)
	cmd := exec.Command("node", args...)
	cmd.Dir = w.cwd
	cmd.Env = w.piEnv()
	p := &rpcPi{t: t, cmd: cmd, more: make(chan struct{}, 1), done: make(chan struct{})}
	cmd.Stderr = &p.stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(p.done)
		r := bufio.NewReaderSize(stdout, 1<<20)
		for {
			line, err := r.ReadString('\n')
			if line = strings.TrimSpace(line); line != "" {
				var ev map[string]any
				if json.Unmarshal([]byte(line), &ev) == nil {
					p.mu.Lock()
					p.events = append(p.events, ev)
					p.lines = append(p.lines, line)
					p.mu.Unlock()
					select {
					case p.more <- struct{}{}:
					default:
					}
				}
			}
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() { p.stop() })
	return p
}

func (p *rpcPi) stop() {
	p.stdin.Close()
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		p.cmd.Process.Kill()
		<-p.done
	}
	p.cmd.Wait()
}

// send sends a command and returns its response.
func (p *rpcPi) send(cmd map[string]any) map[string]any {
	p.t.Helper()
	p.nextID++
	id := fmt.Sprintf("req-%d", p.nextID)
	cmd["id"] = id
	b, _ := json.Marshal(cmd)
	if _, err := p.stdin.Write(append(b, '\n')); err != nil {
		p.t.Fatalf("pi's stdin: %v\n%s", err, p.stderr.String())
	}
	return p.await(fmt.Sprintf("the response to %s", b), func(ev map[string]any) bool {
		return ev["type"] == "response" && ev["id"] == id
	})
}

// await returns the first event (since the start) matching match. The
// limit only keeps a broken run from hanging the suite.
func (p *rpcPi) await(what string, match func(map[string]any) bool) map[string]any {
	p.t.Helper()
	deadline := time.After(90 * time.Second)
	seen := 0
	for {
		p.mu.Lock()
		evs := p.events[seen:]
		seen = len(p.events)
		p.mu.Unlock()
		for _, ev := range evs {
			if match(ev) {
				return ev
			}
		}
		select {
		case <-p.more:
		case <-p.done:
			p.mu.Lock()
			n := len(p.events)
			p.mu.Unlock()
			if n == seen {
				p.t.Fatalf("pi exited waiting for %s\nstderr:\n%s", what, p.stderr.String())
			}
		case <-deadline:
			p.t.Fatalf("no %s from pi\nevents:\n%s\nstderr:\n%s", what, strings.Join(p.allLines(), "\n"), p.stderr.String())
		}
	}
}

func (p *rpcPi) allLines() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.lines...)
}

// prompt sends a user message and waits until pi is done with it (and with
// any compaction it started after it).
func (p *rpcPi) prompt(text string) {
	p.t.Helper()
	p.mu.Lock()
	start := len(p.events)
	p.mu.Unlock()
	if r := p.send(map[string]any{"type": "prompt", "message": text}); r["success"] != true {
		p.t.Fatalf("prompt: %v", r)
	}
	n := 0
	p.await("agent_end", func(ev map[string]any) bool {
		n++
		return n > start && ev["type"] == "agent_end"
	})
	p.idle()
}

// idle waits until pi neither streams nor compacts.
func (p *rpcPi) idle() {
	p.t.Helper()
	for range 900 {
		r := p.send(map[string]any{"type": "get_state"})
		d, _ := r["data"].(map[string]any)
		if d["isStreaming"] == false && d["isCompacting"] == false {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	p.t.Fatal("pi stayed busy")
}

// notices are the texts of the extension's ctx.ui.notify calls.
func (p *rpcPi) notices() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, ev := range p.events {
		if ev["type"] == "extension_ui_request" && ev["method"] == "notify" {
			out = append(out, fmt.Sprint(ev["notifyType"], ": ", ev["message"]))
		}
	}
	return out
}

func (p *rpcPi) sessionFile() string {
	p.t.Helper()
	r := p.send(map[string]any{"type": "get_state"})
	d, _ := r["data"].(map[string]any)
	f, _ := d["sessionFile"].(string)
	if f == "" {
		p.t.Fatalf("no session file: %v", r)
	}
	return f
}

// converse gives pi n exchanges of some length, so that there is something
// to compact.
func (p *rpcPi) converse(n int) {
	for i := range n {
		p.prompt(fmt.Sprintf("Step %d: %s", i+1, strings.Repeat("please keep working on the importer and tell me what changed. ", 8)))
	}
}

// sdk runs test/sdk.mjs: pi's SDK on a session file, one scenario, its
// JSON report on stdout. Lines the test writes to its stdin reach the
// scenario (the abort test's go-ahead); ready, when set, gets the
// scenario's stderr lines starting "READY".
func (w *world) sdk(scenario string, args map[string]any, stdin io.Reader) map[string]any {
	w.t.Helper()
	spec, _ := json.Marshal(map[string]any{"scenario": scenario, "extension": w.extension(), "agentDir": w.agentDir,
		"cwd": w.cwd, "sessions": w.sessions, "args": args})
	cmd := exec.Command("node", filepath.Join("test", "sdk.mjs"), string(spec))
	cmd.Env = w.piEnv()
	cmd.Stdin = stdin
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		w.t.Fatalf("sdk.mjs %s: %v\nstderr:\n%s\nstdout:\n%s", scenario, err, stderr.String(), out)
	}
	var r map[string]any
	if err := json.Unmarshal(out, &r); err != nil {
		w.t.Fatalf("sdk.mjs %s output: %v\n%s\nstderr:\n%s", scenario, err, out, stderr.String())
	}
	r["stderr"] = stderr.String()
	return r
}

// sessionEntry is what the checks need of an entry of the file.
type sessionEntry struct {
	Type       string          `json:"type"`
	ID         string          `json:"id"`
	ParentID   *string         `json:"parentId"`
	CustomType string          `json:"customType"`
	Summary    string          `json:"summary"`
	FromHook   bool            `json:"fromHook"`
	Content    json.RawMessage `json:"content"`
	Details    json.RawMessage `json:"details"`
	FirstKept  string          `json:"firstKeptEntryId"`
}

func readEntries(t testing.TB, file string) []sessionEntry {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []sessionEntry
	for i, line := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		var e sessionEntry
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("%s line %d: %v", file, i+1, err)
		}
		if e.Type != "session" {
			out = append(out, e)
		}
	}
	return out
}

// checkFile reads file back with pi's own functions (SessionManager and
// buildSessionContext, test/piview.mjs) and with `pith context --llm`: the
// same messages, the same leaf; no id twice and no parent missing.
func (w *world) checkFile(file string) []sessionEntry {
	t := w.t
	t.Helper()
	entries := readEntries(t, file)
	ids := map[string]bool{}
	for _, e := range entries {
		if ids[e.ID] {
			t.Errorf("%s: id %s twice", file, e.ID)
		}
		ids[e.ID] = true
	}
	for _, e := range entries {
		if e.ParentID != nil && !ids[*e.ParentID] {
			t.Errorf("%s: entry %s has parent %s, which is not in the file", file, e.ID, *e.ParentID)
		}
	}
	cmd := exec.Command("node", filepath.Join("test", "piview.mjs"), file)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	piOut, err := cmd.Output()
	if err != nil {
		t.Fatalf("piview.mjs: %v\n%s", err, stderr.String())
	}
	pc := exec.Command(w.pith, "context", "--llm", file)
	pc.Env = append(os.Environ(), "PITH_CONFIG=")
	pithOut, err := pc.Output()
	if err != nil {
		t.Fatalf("pith context --llm: %v", err)
	}
	var piView, pithView struct {
		Messages []any  `json:"messages"`
		LeafID   string `json:"leafId"`
	}
	if err := json.Unmarshal(piOut, &piView); err != nil {
		t.Fatalf("piview.mjs output: %v", err)
	}
	if err := json.Unmarshal(pithOut, &pithView); err != nil {
		t.Fatalf("pith context output: %v", err)
	}
	if piView.LeafID != pithView.LeafID {
		t.Errorf("%s: pi's leaf is %s, Pith's %s", file, piView.LeafID, pithView.LeafID)
	}
	if !reflect.DeepEqual(unframed(piView.Messages), unframed(pithView.Messages)) {
		a, _ := json.MarshalIndent(piView.Messages, "", " ")
		b, _ := json.MarshalIndent(pithView.Messages, "", " ")
		t.Errorf("%s: pi's context and `pith context --llm` differ\npi:\n%s\npith:\n%s", file, a, b)
	}
	return entries
}

// unframed reduces the user message a compaction or branch summary becomes
// to the summary itself: Pith frames summaries in words of its own
// (core/prompts/*_frame.txt, "\n</summary>" at the end where pi's branch
// frame has none); the summary within is what must be the same.
func unframed(msgs []any) []any {
	out := make([]any, len(msgs))
	for i, m := range msgs {
		out[i] = m
		mm, ok := m.(map[string]any)
		if !ok || mm["role"] != "user" {
			continue
		}
		blocks, _ := mm["content"].([]any)
		if len(blocks) != 1 {
			continue
		}
		b, _ := blocks[0].(map[string]any)
		text, _ := b["text"].(string)
		open := strings.Index(text, "\n\n<summary>\n")
		if open < 0 || !strings.HasSuffix(text, "</summary>") {
			continue
		}
		inner := strings.TrimSpace(strings.TrimSuffix(text[open+len("\n\n<summary>\n"):], "</summary>"))
		c := map[string]any{}
		for k, v := range mm {
			c[k] = v
		}
		c["content"] = []any{map[string]any{"type": "text", "text": "<summary>" + inner + "</summary>"}}
		out[i] = c
	}
	return out
}

func readJSONFile(t testing.TB, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatal(err)
	}
}

func writeJSON(t testing.TB, path string, v any) {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func ofType(entries []sessionEntry, typ string) []sessionEntry {
	var out []sessionEntry
	for _, e := range entries {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}
