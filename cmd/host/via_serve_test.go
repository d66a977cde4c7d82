package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pith-dev/pith/client"
	"github.com/pith-dev/pith/internal/server"
	"github.com/pith-dev/pith/internal/testtmp"
	"github.com/tidwall/gjson"
)

// serveSessions writes a daemon configuration with plugins whose
// sessions.root is a new directory, and copies the demo session into it
// once for each name.
func serveSessions(t *testing.T, plugins []map[string]any, names ...string) (cfg, root string) {
	t.Helper()
	dir := t.TempDir()
	root = filepath.Join(dir, "sessions")
	demo, err := os.ReadFile("../../examples/demo-session.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range names {
		p := filepath.Join(root, filepath.FromSlash(n))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, demoWithID(demo, i), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if plugins == nil {
		plugins = []map[string]any{}
	}
	cfg = filepath.Join(dir, "pith.json")
	writeConfigMap(t, cfg, map[string]any{"sessions": map[string]any{"root": root}, "plugins": plugins,
		"server": map[string]any{"shutdownTimeout": "5s"}})
	return cfg, root
}

// TestCompactServe: `pith compact --serve` compacts the daemon's session
// and prints what the same compaction run here prints (the same summary,
// cut and figures; only the new entry's id differs), the entry is in the
// file, and the exit codes are the local ones: 3 for nothing to compact,
// 4 for a plugin's veto, 2 for a flag the daemon decides, 1 for a session
// the daemon does not have or a daemon that is not there.
func TestCompactServe(t *testing.T) {
	guard := testPlugin(t, "guard")
	plugins := []map[string]any{{"name": "guard", "path": guard}}
	cfg, root := serveSessions(t, plugins, "team/a.jsonl", "team/vetoed.jsonl")
	p := startServe(t, cfg)

	local := copyFile(t, "../../examples/demo-session.jsonl")
	localCfg := writeConfig(t, plugins...)
	want, stderr, code := runCLI(t, "compact", "--config", localCfg, "--json", local)
	if code != 0 {
		t.Fatalf("local compact: exit %d, %s", code, stderr)
	}
	got, stderr, code := runCLI(t, "compact", "--serve", p.addr, "--json", "team/a.jsonl")
	if code != 0 {
		t.Fatalf("compact --serve: exit %d, %s", code, stderr)
	}
	id := gjson.Get(got, "entryId").String()
	if id == "" {
		t.Fatalf("no entryId in %s", got)
	}
	if g, w := withoutKeys(t, got, "entryId"), withoutKeys(t, want, "entryId"); g != w {
		t.Errorf("compact --serve printed\n%s\nthe same compaction here printed\n%s", g, w)
	}
	data, err := os.ReadFile(filepath.Join(root, "team", "a.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSpace(data), []byte("\n"))
	if last := lines[len(lines)-1]; gjson.GetBytes(last, "type").String() != "compaction" || gjson.GetBytes(last, "id").String() != id {
		t.Errorf("the file's last entry is %s, want the compaction %s", last, id)
	}

	text, stderr, code := runCLI(t, "compact", "--serve", p.addr, "team/a.jsonl")
	if code != exitNothing || !strings.Contains(stderr, "nothing to compact") {
		t.Errorf("compacting again: exit %d, %q %q; want %d, nothing to compact", code, text, stderr, exitNothing)
	}

	// The guard cancels a compaction of a session labelled no-compact.
	vetoed := filepath.Join(root, "team", "vetoed.jsonl")
	out, stderr, code := runCLI(t, "tree", "--json", vetoed)
	leaf := gjson.Get(out, "leafId").String()
	if code != 0 || leaf == "" {
		t.Fatalf("tree: exit %d, %s", code, stderr)
	}
	if _, stderr, code := runCLI(t, "label", vetoed, leaf, "no-compact"); code != 0 {
		t.Fatalf("label: %s", stderr)
	}
	if _, stderr, code := runCLI(t, "compact", "--serve", p.addr, "team/vetoed.jsonl"); code != exitCancelled || !strings.Contains(stderr, "no-compact") {
		t.Errorf("a compaction the guard cancels: exit %d, %q; want %d and its reason", code, stderr, exitCancelled)
	}

	for _, flag := range [][]string{{"--keep-recent-tokens", "100"}, {"--config", localCfg}, {"--dry-run"}, {"--store", root}} {
		args := append([]string{"compact", "--serve", p.addr, "team/a.jsonl"}, flag...)
		if _, stderr, code := runCLI(t, args...); code != exitUsage || !strings.Contains(stderr, flag[0]) || !strings.Contains(stderr, "daemon's configuration") {
			t.Errorf("%s with --serve: exit %d, %q; want %d naming the flag", flag[0], code, stderr, exitUsage)
		}
	}
	if _, stderr, code := runCLI(t, "compact", "--serve-ca", localCfg, local); code != exitUsage || !strings.Contains(stderr, "--serve-ca") {
		t.Errorf("--serve-ca without --serve: exit %d, %q", code, stderr)
	}
	if _, stderr, code := runCLI(t, "compact", "--serve", p.addr, "team/missing.jsonl"); code != exitFailure || !strings.Contains(stderr, "not found") {
		t.Errorf("a session the daemon does not have: exit %d, %q", code, stderr)
	}
	if _, stderr, code := runCLI(t, "compact", "--serve", p.addr, "../outside.jsonl"); code != exitUsage {
		t.Errorf("a NAME outside sessions.root: exit %d, %q; want %d", code, stderr, exitUsage)
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-p.done // its stderr closed: it has exited
	if _, stderr, code := runCLI(t, "compact", "--serve", p.addr, "team/a.jsonl"); code != exitFailure || !strings.Contains(stderr, "pith serve") {
		t.Errorf("no daemon at the address: exit %d, %q", code, stderr)
	}
}

// TestCompactServeToken: a daemon with TLS and tokens is reached with
// --serve-ca and PITH_TOKEN, and only within the token's prefix; no token
// is refused, and nothing is written.
func TestCompactServeToken(t *testing.T) {
	dir := t.TempDir()
	pki := newTestPKI(t, dir)
	cfg, root := serveSessions(t, nil, "team-a/s.jsonl", "team-b/s.jsonl")
	var c map[string]any
	data, err := os.ReadFile(cfg)
	if err != nil || json.Unmarshal(data, &c) != nil {
		t.Fatalf("read %s: %v", cfg, err)
	}
	c["server"] = map[string]any{"shutdownTimeout": "5s",
		"tls":    map[string]any{"certFile": pki.serverCert, "keyFile": pki.serverKey},
		"tokens": []map[string]any{{"name": "team-a", "sha256": server.HashToken("token-a"), "prefix": "team-a/"}}}
	writeConfigMap(t, cfg, c)
	p := startServe(t, cfg)

	t.Setenv("PITH_TOKEN", "")
	if _, stderr, code := runCLI(t, "compact", "--serve", p.addr, "--serve-ca", pki.caFile, "team-a/s.jsonl"); code == 0 || !strings.Contains(stderr, "unauthenticated") {
		t.Errorf("no token: exit %d, %q", code, stderr)
	}
	t.Setenv("PITH_TOKEN", "token-a")
	if _, stderr, code := runCLI(t, "compact", "--serve", p.addr, "--serve-ca", pki.caFile, "team-b/s.jsonl"); code == 0 || !strings.Contains(stderr, "permission denied") {
		t.Errorf("another tenant's session: exit %d, %q", code, stderr)
	}
	if _, stderr, code := runCLI(t, "compact", "--serve", p.addr, "--serve-ca", pki.caFile, "team-a/s.jsonl"); code != 0 {
		t.Errorf("own session with the token: exit %d, %q", code, stderr)
	}
	b, err := os.ReadFile(filepath.Join(root, "team-b", "s.jsonl"))
	if err != nil || bytes.Contains(b, []byte(`"type":"compaction"`)) {
		t.Errorf("team-b's session was compacted (or unreadable: %v)", err)
	}
	// Without --serve-ca a loopback address is dialled in clear text,
	// which a TLS daemon does not answer.
	if _, stderr, code := runCLI(t, "compact", "--serve", p.addr, "team-a/s.jsonl"); code == 0 {
		t.Errorf("a TLS daemon in clear text: exit 0, %q", stderr)
	}
}

// TestNavigateServe: `pith navigate --serve` moves the daemon's session
// and prints what the same navigation here prints (the new entries' ids
// aside): with a branch summary, to a user message (its text to edit),
// to where it already is; a session_before_tree plugin's veto is exit 4,
// as it is here, and a flag the daemon decides is refused.
func TestNavigateServe(t *testing.T) {
	vetoer := testPlugin(t, "scripted")
	cfg, root := serveSessions(t, nil, "a.jsonl", "b.jsonl", "c.jsonl")
	p := startServe(t, cfg)
	local := copyFile(t, "../../examples/demo-session.jsonl")

	newIDs := []string{"summaryEntryId", "newLeafId", "oldLeafId"} // oldLeafId: the last step's new leaf
	for _, step := range [][]string{
		{"--to", demoBranchPoint, "--summarize"},
		{"--to", demoUserMessage},
		{"--to", demoUserMessage},
		{"--to", demoLeaf, "--no-summarize", "--label", "back"},
	} {
		want, stderr, code := runCLI(t, append([]string{"navigate", "--json", local}, step...)...)
		if code != 0 {
			t.Fatalf("navigate %v here: exit %d, %s", step, code, stderr)
		}
		got, stderr, code := runCLI(t, append([]string{"navigate", "--json", "--serve", p.addr, "a.jsonl"}, step...)...)
		if code != 0 {
			t.Fatalf("navigate --serve %v: exit %d, %s", step, code, stderr)
		}
		if g, w := withoutKeys(t, got, newIDs...), withoutKeys(t, want, newIDs...); g != w {
			t.Errorf("navigate --serve %v printed\n%s\nhere\n%s", step, g, w)
		}
	}
	data, err := os.ReadFile(filepath.Join(root, "a.jsonl"))
	if err != nil || !bytes.Contains(data, []byte(`"type":"branch_summary"`)) {
		t.Errorf("no branch summary in the daemon's file (%v)", err)
	}

	text, stderr, code := runCLI(t, "navigate", "--serve", p.addr, "b.jsonl", "--to", demoUserMessage)
	if code != 0 || !strings.Contains(text, "message to edit and send again") {
		t.Errorf("navigate --serve to a user message: exit %d, %q %q", code, text, stderr)
	}
	if _, stderr, code := runCLI(t, "navigate", "--serve", p.addr, "b.jsonl", "--to", demoLeaf, "--dry-run"); code != exitUsage || !strings.Contains(stderr, "--dry-run") {
		t.Errorf("--dry-run with --serve: exit %d, %q", code, stderr)
	}
	if _, stderr, code := runCLI(t, "navigate", "--serve", p.addr, "b.jsonl", "--to", "nosuchid"); code == 0 {
		t.Errorf("navigate --serve to a missing entry: exit 0, %q", stderr)
	}

	// A daemon whose plugin cancels every navigation.
	vcfg, _ := serveSessions(t, []map[string]any{{"name": "vetoer", "path": vetoer, "args": []string{"--before-tree", "cancel"}}}, "c.jsonl")
	vp := startServe(t, vcfg)
	if _, stderr, code := runCLI(t, "navigate", "--serve", vp.addr, "c.jsonl", "--to", demoBranchPoint); code != exitCancelled || !strings.Contains(stderr, "cancelled") {
		t.Errorf("a navigation a plugin cancels: exit %d, %q; want %d", code, stderr, exitCancelled)
	}
}

// withoutKeys is a JSON object without keys: the ids of the entries an
// operation writes, new at every run.
func withoutKeys(t *testing.T, s string, keys ...string) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("%v: %s", err, s)
	}
	for _, k := range keys {
		delete(m, k)
	}
	out, _ := json.Marshal(m)
	return string(out)
}

// TestCompactServeUnixSocket: a daemon on a unix socket is reached as
// unix:/path, in clear text, as on loopback.
func TestCompactServeUnixSocket(t *testing.T) {
	cfg, _ := serveSessions(t, nil, "a.jsonl")
	sock := filepath.Join(testtmp.Short(t), "pith.sock")
	p := startServe(t, cfg, "--listen", "unix:"+sock)
	if !strings.HasPrefix(p.addr, "unix:") {
		t.Fatalf("the daemon listens on %q, want unix:%s", p.addr, sock)
	}
	if out, stderr, code := runCLI(t, "compact", "--serve", p.addr, "a.jsonl"); code != 0 || !strings.Contains(out, "compacted:") {
		t.Errorf("compact --serve %s: exit %d, %q %q", p.addr, code, out, stderr)
	}
}

// TestCompactServeLeavesOtherClients: the daemon shares a session with
// every client, so the command leaves it open: an agent watching it sees
// the compaction and goes on watching (a CloseSession from the command
// would end its stream with NOT_FOUND).
func TestCompactServeLeavesOtherClients(t *testing.T) {
	cfg, _ := serveSessions(t, nil, "a.jsonl")
	p := startServe(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.Dial(p.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := c.Open(ctx, "a.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	w, err := s.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, stderr, code := runCLI(t, "compact", "--serve", p.addr, "a.jsonl"); code != 0 {
		t.Fatalf("compact --serve: exit %d, %s", code, stderr)
	}
	next := func(kind string) client.Event {
		t.Helper()
		for {
			ev, err := w.Next()
			if err != nil {
				t.Fatalf("the agent's watch waiting for %s: %v", kind, err)
			}
			if ev.Kind == kind {
				return ev
			}
		}
	}
	next("compaction_end")
	if _, err := s.AppendMessages(ctx, json.RawMessage(`{"role":"user","content":"still here","timestamp":1}`)); err != nil {
		t.Fatalf("the agent's append after the command: %v", err)
	}
	next("entries_appended")
}

// TestCompactServeExplore: a daemon whose compactions use the explore
// strategy (a loopback model server scripted as in
// TestCompactExploreEndToEnd) prints through --serve what the same
// compaction here prints: the strategy, the worker's figures and the
// auto-read entry included, and the worker's turns on stderr.
func TestCompactServeExplore(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-test")
	_, localURL := startWorkerServer(t, "openai", exploringWorker...)
	_, daemonURL := startWorkerServer(t, "openai", exploringWorker...)
	path, ws := exploreSession(t)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want, stderr, code := runCLI(t, "compact", path, "--strategy", "explore", "--provider", "openai", "--base-url", localURL,
		"--model", "worker-model", "--keep-recent-tokens", "2000", "--workspace", ws, "--json")
	if code != 0 {
		t.Fatalf("here: exit %d: %s", code, stderr)
	}

	root := filepath.Join(t.TempDir(), "sessions")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "x.jsonl"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "pith.json")
	writeConfigMap(t, cfg, map[string]any{
		"sessions":   map[string]any{"root": root},
		"server":     map[string]any{"shutdownTimeout": "5s", "workspaceRoot": ws},
		"summarizer": map[string]any{"provider": "openai", "baseUrl": daemonURL, "model": "worker-model"},
		"compaction": map[string]any{"strategy": "explore", "retainedTokens": 2000},
	})
	p := startServe(t, cfg)
	got, stderr, code := runCLI(t, "compact", "--serve", p.addr, "--json", "x.jsonl")
	if code != 0 {
		t.Fatalf("--serve: exit %d: %s", code, stderr)
	}
	// The worker's turns as they happen, from the daemon's progress events.
	if !strings.Contains(stderr, "explore: turn 4/20: write_summary") {
		t.Errorf("no live turn lines: %q", stderr)
	}
	if gjson.Get(got, "strategy").String() != "explore" || gjson.Get(got, "autoReadEntryId").String() == "" || gjson.Get(got, "explore.turns").Int() != 4 {
		t.Errorf("--serve printed %s", got)
	}
	if g, w := withoutKeys(t, got, "entryId", "autoReadEntryId"), withoutKeys(t, want, "entryId", "autoReadEntryId"); g != w {
		t.Errorf("--serve printed\n%s\nhere\n%s", g, w)
	}
}
