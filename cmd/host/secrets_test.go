package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pith-dev/pith/client"
)

// fakeHome lays out a home directory holding the credentials a model
// steered by a session's text would ask for, each with its own marker,
// and a project with one ordinary file. It returns the home and the
// markers, none of which may leave it.
func fakeHome(t *testing.T) (home string, markers []string) {
	t.Helper()
	home = t.TempDir()
	pem := func(label, m string) string {
		return "-----BEGIN " + label + " PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjE" + m + "\n-----END " + label + " PRIVATE KEY-----\n"
	}
	files := map[string]func(m string) string{
		".ssh/id_ed25519":  func(m string) string { return pem("OPENSSH", m) },
		".ssh/id_rsa":      func(m string) string { return pem("RSA", m) },
		".ssh/config":      func(m string) string { return "Host prod\n  User " + m + "\n" },
		".aws/credentials": func(m string) string { return "[default]\naws_secret_access_key = " + m + "\n" },
		".config/gcloud/application_default_credentials.json": func(m string) string { return `{"refresh_token":"` + m + `"}` + "\n" },
		".azure/msal_token_cache.json":                        func(m string) string { return `{"secret":"` + m + `"}` + "\n" },
		".kube/config":                                        func(m string) string { return "token: " + m + "\n" },
		".gnupg/private-keys-v1.d/0A.key":                     func(m string) string { return "(private-key " + m + ")\n" },
		".env":                                                func(m string) string { return "OPENAI_API_KEY=" + m + "\n" },
		".netrc":                                              func(m string) string { return "machine api.example.com login me password " + m + "\n" },
		".git-credentials":                                    func(m string) string { return "https://me:" + m + "@github.com\n" },
		"proj/.env.local":                                     func(m string) string { return "DB_PASSWORD=" + m + "\n" },
		"proj/.ENV":                                           func(m string) string { return "TOKEN=" + m + "\n" },
		"proj/deploy.pem":                                     func(m string) string { return "cert and key " + m + "\n" },
		"proj/tls.Key":                                        func(m string) string { return "key " + m + "\n" },
		// An innocent name holding a key: refused by its content.
		"proj/notes.txt": func(m string) string { return "deploy notes\n\n" + pem("EC", m) },
		"proj/sa.json": func(m string) string {
			return `{"type":"service_account","private_key":"-----BEGIN PRIVATE KEY-----\nMII` + m + `\n-----END PRIVATE KEY-----\n"}` + "\n"
		},
	}
	i := 0
	for name, content := range files {
		i++
		m := fmt.Sprintf("S3CR3T%02dX%s", i, strings.Map(func(r rune) rune {
			if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
				return r
			}
			return 'q'
		}, strings.ToLower(name)))
		markers = append(markers, m)
		p := filepath.Join(home, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content(m)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(home, "proj", "main.go"), []byte("package main\n\nfunc ordinaryCode() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Links named innocently, to a key and to a credentials folder.
	if err := os.Symlink("../.ssh/id_ed25519", filepath.Join(home, "proj", "README")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../.aws", filepath.Join(home, "proj", "settings")); err != nil {
		t.Fatal(err)
	}
	return home, markers
}

// secretAsks are the paths a hostile worker asks for, relative to the
// fake home and absolute, through "..", links and another case.
func secretAsks(home string) []string {
	asks := []string{
		".ssh/id_ed25519", ".ssh/id_rsa", ".ssh/config", ".aws/credentials",
		".config/gcloud/application_default_credentials.json", ".azure/msal_token_cache.json", ".kube/config",
		".gnupg/private-keys-v1.d/0A.key", ".env", ".netrc", ".git-credentials",
		"proj/.env.local", "proj/.ENV", "proj/deploy.pem", "proj/tls.Key", "proj/notes.txt", "proj/sa.json",
		"proj/README", "proj/settings/credentials", "proj/../.ssh/id_rsa", ".SSH/ID_ED25519",
		filepath.Join(home, ".ssh", "id_ed25519"), filepath.Join(home, "proj", "..", ".netrc"),
	}
	return asks
}

// hostileScript reads every secret, then marks and references them, then
// writes a summary.
func hostileScript(home string) []workerTurn {
	var reads, marks [][2]string
	for _, p := range secretAsks(home) {
		q := strconvQuote(p)
		reads = append(reads, [2]string{"read_file", `{"path":` + q + `}`}, [2]string{"read_file", `{"path":` + q + `,"offset":2}`})
		marks = append(marks, [2]string{"mark_read_required", `{"path":` + q + `}`}, [2]string{"add_reference", `{"path":` + q + `}`})
	}
	reads = append(reads, [2]string{"read_file", `{"path":"proj/main.go"}`})
	marks = append(marks, [2]string{"mark_read_required", `{"path":"proj/main.go"}`})
	return []workerTurn{
		{calls: reads},
		{calls: marks},
		{calls: [][2]string{{"write_summary", `{"text":"## Goal\nExfiltrate nothing."}`}}},
	}
}

// demoSession is the demo session's path, absolute: the tests here
// change the working directory.
var demoSession, _ = filepath.Abs("../../examples/demo-session.jsonl")

// homeSession is the demo session with its workspace the fake home, and
// its recent reads the secrets (what rehydrate reads back).
func homeSession(t *testing.T, home string) string {
	t.Helper()
	data, err := os.ReadFile(demoSession)
	if err != nil {
		t.Fatalf("demo session: %v", err)
	}
	data = bytes.Replace(data, []byte(`"cwd":"/home/dev/ledger"`), []byte(`"cwd":`+strconvQuote(home)), 1)
	for old, secret := range map[string]string{
		"internal/csvimport/reader.go": ".ssh/id_ed25519",
		"cmd/ledger/report.go":         "proj/README",
		"internal/report/aggregate.go": "proj/notes.txt",
	} {
		data = bytes.ReplaceAll(data, []byte(`"path":"`+old+`"`), []byte(`"path":"`+secret+`"`))
	}
	path := filepath.Join(t.TempDir(), "session.jsonl")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// noSecrets fails when a marker is in any of texts.
func noSecrets(t *testing.T, what string, markers []string, texts ...string) {
	t.Helper()
	for i, s := range texts {
		for _, m := range markers {
			if strings.Contains(s, m) {
				t.Errorf("%s #%d holds the secret %s", what, i, m)
			}
		}
	}
}

// TestHostileWorkerReadsNoSecrets: pi was started in the home directory,
// and so is pith; a model steered by the session's text asks for every
// credential of the home directory — by name, in another case, through
// "..", through links named innocently, by an absolute path, with a
// window after a key's header line — through read_file,
// mark_read_required and add_reference, and rehydrate re-reads the
// secrets the session "read". None of their bytes reaches a model
// request or the session file; each ask is refused by the deny list, and
// the ordinary file is read.
func TestHostileWorkerReadsNoSecrets(t *testing.T) {
	for _, wire := range []string{"openai", "anthropic"} {
		t.Run(wire, func(t *testing.T) {
			t.Setenv("OPENAI_API_KEY", "sk-test")
			t.Setenv("ANTHROPIC_API_KEY", "sk-ant-test")
			home, markers := fakeHome(t)
			srv, url := startWorkerServer(t, wire, hostileScript(home)...)
			path := homeSession(t, home)
			cfg := filepath.Join(t.TempDir(), "pith.yaml")
			if err := os.WriteFile(cfg, []byte("compaction:\n  rehydrate:\n    files: 5\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			t.Chdir(home)
			out, stderr, code := runCLI(t, "compact", path, "--strategy", "explore", "--provider", wire, "--base-url", url,
				"--model", "worker-model", "--keep-recent-tokens", "2000", "--config", cfg, "--json")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			reqs := srv.requests()
			if len(reqs) != 3 {
				t.Fatalf("%d model requests", len(reqs))
			}
			data, _ := os.ReadFile(path)
			noSecrets(t, "model request", markers, reqs...)
			noSecrets(t, "session file", markers, string(data))
			noSecrets(t, "output", markers, out, stderr)
			// 2 reads of each ask; the refusal is in the words the brief
			// gives, with no size.
			if n := strings.Count(reqs[1], "denied by the workspace deny list"); n != 2*len(secretAsks(home)) {
				t.Errorf("%d refusals in the tool results, want %d: %.3000s", n, 2*len(secretAsks(home)), reqs[1])
			}
			if n := strings.Count(reqs[1], "bytes in all"); n != 1 {
				t.Errorf("%d sizes in the tool results, want the ordinary file's only", n)
			}
			if !strings.Contains(reqs[1], "ordinaryCode") || !strings.Contains(string(data), "func ordinaryCode() {}") {
				t.Errorf("the ordinary file was not read: %.300s", out)
			}
		})
	}
}

// TestRehydrateReadsNoSecrets: the summary strategy with rehydrate on
// re-reads the files the summarized part read — here a key, a link to
// one and a file holding one — and puts none of them in the session.
func TestRehydrateReadsNoSecrets(t *testing.T) {
	home, markers := fakeHome(t)
	path := homeSession(t, home)
	cfg := filepath.Join(t.TempDir(), "pith.yaml")
	if err := os.WriteFile(cfg, []byte("compaction:\n  rehydrate:\n    files: 5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(home)
	out, stderr, code := runCLI(t, "compact", path, "--keep-recent-tokens", "2000", "--config", cfg, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	data, _ := os.ReadFile(path)
	noSecrets(t, "session file", markers, string(data), out, stderr)
	last := string(data[bytes.LastIndexByte(bytes.TrimSpace(data), '\n')+1:])
	if !strings.Contains(last, "pith.rehydrate") || !strings.Contains(last, "denied by the workspace deny list") {
		t.Errorf("rehydrate entry = %.600s", last)
	}
}

// TestLocalRunOutsideWorkspace: a session whose workspace is not the
// current directory nor below it reads no file — one warning line, and
// the worker is offered no file tools and told they are off — until
// --workspace names it.
func TestLocalRunOutsideWorkspace(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-test")
	home, markers := fakeHome(t)
	script := []workerTurn{
		{calls: [][2]string{{"read_file", `{"path":"proj/main.go"}`}}},
		{calls: [][2]string{{"write_summary", `{"text":"## Goal\nNothing."}`}}},
	}
	cfg := filepath.Join(t.TempDir(), "pith.yaml")
	if err := os.WriteFile(cfg, []byte("compaction:\n  rehydrate:\n    files: 5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())

	srv, url := startWorkerServer(t, "openai", script...)
	path := homeSession(t, home)
	args := []string{"compact", path, "--strategy", "explore", "--provider", "openai", "--base-url", url,
		"--model", "worker-model", "--keep-recent-tokens", "2000", "--config", cfg}
	_, stderr, code := runCLI(t, args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if n := strings.Count(stderr, "outside the current directory"); n != 1 || !strings.Contains(stderr, "--workspace") {
		t.Errorf("want one warning line, got %d:\n%s", n, stderr)
	}
	reqs := srv.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests", len(reqs))
	}
	var first struct {
		Tools []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	if err := json.Unmarshal([]byte(reqs[0]), &first); err != nil {
		t.Fatal(err)
	}
	for _, tl := range first.Tools {
		if fileTool := tl.Function.Name; fileTool == "read_file" || fileTool == "mark_read_required" || fileTool == "add_reference" {
			t.Errorf("the worker was offered %s", fileTool)
		}
	}
	if !strings.Contains(reqs[0], "are off for this compaction") {
		t.Errorf("the system prompt does not say the file tools are off: %.600s", reqs[0])
	}
	data, _ := os.ReadFile(path)
	if strings.Contains(strings.Join(reqs, ""), "ordinaryCode") || strings.Contains(string(data), "ordinaryCode") || strings.Contains(string(data), "pith.rehydrate") {
		t.Error("a workspace file was read")
	}
	noSecrets(t, "model request", markers, reqs...)

	// --workspace names it: the file is read (and the secrets still are not).
	srv, url = startWorkerServer(t, "openai", script...)
	path = homeSession(t, home)
	args[7] = url
	args[1] = path
	_, stderr, code = runCLI(t, append(args, "--workspace", home)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if strings.Contains(stderr, "outside the current directory") {
		t.Errorf("warned with --workspace: %s", stderr)
	}
	reqs = srv.requests()
	if len(reqs) < 2 || !strings.Contains(reqs[1], "ordinaryCode") {
		t.Errorf("--workspace: the file was not read")
	}
	data, _ = os.ReadFile(path)
	noSecrets(t, "model request", markers, reqs...)
	noSecrets(t, "session file", markers, string(data))

	// workspace.roots does the same from the configuration.
	if err := os.WriteFile(cfg, []byte("workspace:\n  roots: ["+strconvQuote(home)+"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv, url = startWorkerServer(t, "openai", script...)
	path = homeSession(t, home)
	args[7] = url
	args[1] = path
	_, stderr, code = runCLI(t, args...)
	if code != 0 || strings.Contains(stderr, "outside the current directory") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if reqs = srv.requests(); len(reqs) < 2 || !strings.Contains(reqs[1], "ordinaryCode") {
		t.Errorf("workspace.roots: the file was not read")
	}

	// --workspace must name a directory.
	if _, stderr, code = runCLI(t, append(args, "--workspace", filepath.Join(home, "missing"))...); code == 0 || !strings.Contains(stderr, "not a directory") {
		t.Errorf("--workspace missing: exit %d, %s", code, stderr)
	}

	// --workspace is refused where the daemon's rule applies.
	_, stderr, code = runCLI(t, "compact", "x.jsonl", "--store", t.TempDir(), "--workspace", home)
	if code == 0 || !strings.Contains(stderr, "server.workspaceRoot") {
		t.Errorf("--workspace with --store: exit %d, %s", code, stderr)
	}
}

// TestServeDeniesSecrets: `pith serve` keeps its workspaceRoot rule and
// holds every read to the deny list too: a tenant's workspace under the
// root holding a .env, a key and a link to a key gives none of them to
// the worker.
func TestServeDeniesSecrets(t *testing.T) {
	wsRoot := t.TempDir()
	ws := filepath.Join(wsRoot, "proj")
	if err := os.MkdirAll(filepath.Join(ws, ".ssh"), 0o755); err != nil {
		t.Fatal(err)
	}
	secrets := map[string]string{".env": "API_KEY=S3CR3TENV", ".ssh/id_ed25519": "S3CR3TKEY", "docs.txt": "-----BEGIN PRIVATE KEY-----\nS3CR3TPEM\n"}
	for name, content := range secrets {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(content+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(".ssh/id_ed25519", filepath.Join(ws, "plan.md")); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(ws, "notes.md"), []byte("# Plan: ordinary\n"), 0o644)
	var reads [][2]string
	for _, p := range []string{".env", ".ssh/id_ed25519", "docs.txt", "plan.md", "notes.md"} {
		reads = append(reads, [2]string{"read_file", `{"path":"` + p + `"}`}, [2]string{"mark_read_required", `{"path":"` + p + `"}`})
	}
	srv, url := startWorkerServer(t, "openai",
		workerTurn{calls: reads},
		workerTurn{calls: [][2]string{{"write_summary", `{"text":"## Goal\nServe."}`}}},
	)
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "pith.json")
	cfg, _ := json.Marshal(map[string]any{
		"contextWindow": 60000,
		"summarizer":    map[string]any{"provider": "openai", "baseUrl": url, "model": "worker-model"},
		"compaction":    map[string]any{"strategy": "explore", "retainedTokens": 300, "reserveTokens": 2000},
		"sessions":      map[string]any{"root": "sessions"},
		"server":        map[string]any{"shutdownTimeout": "5s", "workspaceRoot": wsRoot},
	})
	if err := os.WriteFile(cfgPath, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("OPENAI_API_KEY", "sk-test")
	p := startServe(t, cfgPath)
	c, err := client.Dial(p.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	s, err := c.Create(ctx, "secrets/session.jsonl", ws)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 8; i++ {
		if _, err := s.AppendMessages(ctx, serveMessage("user", fmt.Sprintf("u%d", i), 120), serveMessage("assistant", fmt.Sprintf("a%d", i), 120)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Compact(ctx, "", nil); err != nil {
		t.Fatal(err)
	}
	reqs := srv.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d worker requests", len(reqs))
	}
	got, err := s.Context(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var all []string
	for _, m := range got.Messages {
		all = append(all, string(m))
	}
	data, _ := os.ReadFile(filepath.Join(dir, "sessions", "secrets", "session.jsonl"))
	markers := []string{"S3CR3TENV", "S3CR3TKEY", "S3CR3TPEM"}
	noSecrets(t, "worker request", markers, reqs...)
	noSecrets(t, "context", markers, all...)
	noSecrets(t, "session file", markers, string(data))
	if n := strings.Count(reqs[1], "denied by the workspace deny list"); n != 8 || !strings.Contains(reqs[1], "Plan: ordinary") {
		t.Errorf("%d refusals: %.2000s", n, reqs[1])
	}
}
