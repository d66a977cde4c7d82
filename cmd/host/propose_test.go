package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/pith-dev/pith/core/explore"
	"github.com/pith-dev/pith/core/propose"
	"github.com/pith-dev/pith/internal/testproc"
	"github.com/pith-dev/pith/sdk/sdktest"
)

// The propose mode's tests run `pith propose` on real files with real
// subprocess plugins (internal/testplugins/scripted) and a loopback model
// server speaking OpenAI chat completions.

// summaryServer answers every chat completion with summary and keeps the
// request bodies; with hang set it answers none, and closes started once
// the first request arrived.
type summaryServer struct {
	summary string
	hang    bool
	started chan struct{}
	once    sync.Once
	mu      sync.Mutex
	bodies  []string
}

func startSummaryServer(t *testing.T, summary string, hang bool) (*summaryServer, string) {
	t.Helper()
	s := &summaryServer{summary: summary, hang: hang, started: make(chan struct{})}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return s, srv.URL + "/v1"
}

// stamps are what differs between two writers of the same entries: the
// time each writes, and the ids it picks (the leaf's).
var stamps = regexp.MustCompile(`"(timestamp|leafId)":(\d+|"[^"]*")`)

func (s *summaryServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/chat/completions" {
		http.NotFound(w, r)
		return
	}
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.bodies = append(s.bodies, string(body))
	s.mu.Unlock()
	s.once.Do(func() { close(s.started) })
	if s.hang {
		<-r.Context().Done()
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "local-model",
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": s.summary}}},
		"usage": map[string]any{"prompt_tokens": 900, "completion_tokens": 40, "total_tokens": 940},
	})
}

func (s *summaryServer) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.bodies...)
}

// scripted builds the scripted test plugin into the test's directory.
func scripted(t *testing.T) string {
	t.Helper()
	bin, err := sdktest.BuildTo(t.TempDir(), "github.com/pith-dev/pith/internal/testplugins/scripted")
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// proposeConfig writes a configuration with the loopback summarizer, the
// plugins and extra top-level settings.
func proposeConfig(t *testing.T, baseURL string, extra map[string]any, plugins ...map[string]any) string {
	t.Helper()
	if plugins == nil {
		plugins = []map[string]any{}
	}
	cfg := map[string]any{"plugins": plugins, "compaction": map[string]any{"keepRecentTokens": 8000}}
	if baseURL != "" {
		cfg["summarizer"] = map[string]any{"provider": "openai", "model": "local-model", "baseUrl": baseURL}
	}
	for k, v := range extra {
		cfg[k] = v
	}
	path := filepath.Join(t.TempDir(), "pith.json")
	writeConfigMap(t, path, cfg)
	return path
}

// dirState is a directory's listing with each file's bytes: what the
// propose mode must leave exactly as it was.
func dirState(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		data, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		fmt.Fprintf(&b, "%s %v %d %s %x\n", e.Name(), info.Mode(), info.Size(), info.ModTime(), data)
	}
	return b.String()
}

// proposeCLI runs `pith propose` in process with req on stdin and returns
// its events; the last must be the result.
func proposeCLI(t *testing.T, req any, args ...string) []propose.Event {
	t.Helper()
	in, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code := runIn(append([]string{"propose"}, args...), bytes.NewReader(in), &out, &errb)
	events := parseEvents(t, out.Bytes())
	if code != 0 {
		t.Fatalf("propose %v: exit %d: %s\n%s", args, code, errb.String(), out.String())
	}
	if len(events) == 0 || events[len(events)-1].Type != propose.TypeResult {
		t.Fatalf("propose %v: no result last: %s", args, out.String())
	}
	for _, e := range events[:len(events)-1] {
		if e.Type == propose.TypeResult || e.Type == propose.TypeError {
			t.Fatalf("propose %v: a %s before the end: %s", args, e.Type, out.String())
		}
	}
	return events
}

func parseEvents(t *testing.T, out []byte) []propose.Event {
	t.Helper()
	var events []propose.Event
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var e propose.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("not an NDJSON event: %q: %v", sc.Text(), err)
		}
		events = append(events, e)
	}
	return events
}

func stages(events []propose.Event) []string {
	var out []string
	for _, e := range events {
		if e.Type == propose.TypeProgress {
			out = append(out, e.Stage)
		}
	}
	return out
}

// TestProposeCompactWritesNothing: the whole pipeline runs — the plugins'
// session_before_compact and session.compacting, the loopback summarizer,
// the checks — and the answer carries the summary, the plugin's context
// line reached the summarizer's input, its injected message comes back as
// an entry for pi to write; the session file's bytes and its directory's
// listing are exactly as before (no lock file, no sidecar). pi's leaf,
// which is not the file's last entry, is the one compacted.
func TestProposeCompactWritesNothing(t *testing.T) {
	bin := scripted(t)
	const summary = "## Goal\nFix the CSV importer.\n\n## Critical Context\n- from the loopback model"
	srv, url := startSummaryServer(t, summary, false)
	t.Setenv("OPENAI_API_KEY", "sk-test")
	cfg := proposeConfig(t, url, nil,
		map[string]any{"name": "first", "path": bin, "priority": 10, "events": []string{"session_before_compact"},
			"args": []string{"-name", "first", "-before-compact", "none"}},
		map[string]any{"name": "keeper", "path": bin, "priority": 20, "events": []string{"session.compacting"},
			"args": []string{"-name", "keeper", "-compacting", "inject"}},
	)
	path := copyFile(t, "../../examples/demo-session.jsonl")
	dir := filepath.Dir(path)
	before := dirState(t, dir)

	events := proposeCLI(t, map[string]any{"reason": "manual", "preparation": map[string]any{"firstKeptEntryId": "ignored"}},
		"compact", "--config", cfg, path)
	res := events[len(events)-1]
	if res.Outcome != propose.OutcomeCompacted || res.Compaction == nil || !strings.HasPrefix(res.Compaction.Summary, summary) {
		t.Fatalf("result %+v", res)
	}
	if got := strings.Join(stages(events), ","); got != "session_before_compact,session.compacting,summarize,check" {
		t.Errorf("stages %s", got)
	}
	if res.Compaction.FirstKeptEntryID == "" || res.Compaction.TokensBefore == 0 || !strings.Contains(string(res.Compaction.Details), `"reason":"manual"`) ||
		!strings.Contains(string(res.Compaction.Details), `"generatedBy":"pith"`) {
		t.Errorf("compaction %+v", res.Compaction)
	}
	if len(res.Entries) != 1 || res.Entries[0].Kind != propose.KindMessage || res.Entries[0].CustomType != "keeper/note" ||
		string(res.Entries[0].Content) != `"keeper keeps this word for word"` || !res.Entries[0].Display ||
		string(res.Entries[0].Details) != `{"plugin":"keeper"}` {
		t.Errorf("entries %+v", res.Entries)
	}
	// The history's request has it (a split turn's prefix is a second,
	// concurrent one).
	if reqs := srv.requests(); !strings.Contains(strings.Join(reqs, "\n"), "- keeper: ") {
		t.Errorf("the context line did not reach the summarizer: %.300s", reqs)
	}
	if after := dirState(t, dir); after != before {
		t.Fatalf("the directory changed:\nbefore %s\nafter %s", before, after)
	}
	testproc.RequireNoChildren(t) // every plugin stopped with the command
}

// TestProposeCompactVetoAndPluginCompaction: a plugin's cancel is the
// result "cancelled" with the plugin and its reason; a plugin's own
// compaction is the result, named after it. Neither reaches the
// summarizer.
func TestProposeCompactVetoAndPluginCompaction(t *testing.T) {
	bin := scripted(t)
	srv, url := startSummaryServer(t, "## Goal\nunused", false)
	t.Setenv("OPENAI_API_KEY", "sk-test")
	path := copyFile(t, "../../examples/demo-session.jsonl")
	for _, mode := range []string{"cancel", "compact"} {
		cfg := proposeConfig(t, url, nil, map[string]any{"name": "first", "path": bin, "events": []string{"session_before_compact"},
			"args": []string{"-name", "first", "-before-compact", mode}})
		res := proposeCLI(t, map[string]any{}, "compact", "--config", cfg, path)
		got := res[len(res)-1]
		switch mode {
		case "cancel":
			if got.Outcome != propose.OutcomeCancelled || got.By != "first" || got.Reason != "first says no" {
				t.Errorf("cancel: %+v", got)
			}
		case "compact":
			if got.Outcome != propose.OutcomeCompacted || got.Compaction.Summary != "first summary" || got.Plugin != "first" ||
				!strings.Contains(string(got.Compaction.Details), `"by":"first"`) || strings.Contains(string(got.Compaction.Details), "generatedBy") {
				t.Errorf("compact: %+v", got)
			}
		}
	}
	if n := len(srv.requests()); n != 0 {
		t.Errorf("%d summarizer requests", n)
	}
}

// piLine is an entry as pi's SessionManager writes it: its own fields
// first, then id, parentId and timestamp.
func piLine(t *testing.T, typ string, fields map[string]any, id, parent string) []byte {
	t.Helper()
	var b bytes.Buffer
	b.WriteString(`{"type":` + strconvQuote(typ))
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v, err := json.Marshal(fields[k])
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString("," + strconvQuote(k) + ":" + string(v))
	}
	fmt.Fprintf(&b, `,"id":%q,"parentId":%q,"timestamp":"2026-01-01T00:00:00.000Z"}`+"\n", id, parent)
	return b.Bytes()
}

// writeAsPi appends the proposal to a copy of the session as pi's
// extension makes pi write it: the compaction (fromHook true, pi's rule),
// then every entry through pi.sendMessage or pi.appendEntry.
func writeAsPi(t *testing.T, src string, res propose.Event) string {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSpace(data), []byte("\n"))
	var last struct {
		ID string `json:"id"`
	}
	json.Unmarshal(lines[len(lines)-1], &last)
	c := res.Compaction
	data = append(data, piLine(t, "compaction", map[string]any{"summary": c.Summary, "firstKeptEntryId": c.FirstKeptEntryID,
		"tokensBefore": c.TokensBefore, "details": c.Details, "fromHook": true}, "c0mpact1", last.ID)...)
	parent := "c0mpact1"
	for i, e := range res.Entries {
		id := fmt.Sprintf("e%07d", i)
		if e.Kind == propose.KindMessage {
			data = append(data, piLine(t, "custom_message", map[string]any{"customType": e.CustomType, "content": e.Content,
				"display": e.Display, "details": e.Details}, id, parent)...)
		} else {
			data = append(data, piLine(t, "custom", map[string]any{"customType": e.CustomType, "data": e.Data}, id, parent)...)
		}
		parent = id
	}
	out := filepath.Join(t.TempDir(), "as-pi.jsonl")
	if err := os.WriteFile(out, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestProposeExploreAutoRead: with the explore strategy the worker's
// auto-read file comes back as an entry; written by pi, the session's
// context (`pith context --llm`) is the one `pith compact` gives when Pith
// writes the same compaction itself.
func TestProposeExploreAutoRead(t *testing.T) {
	path, ws := exploreSession(t)
	_, url := startWorkerServer(t, "openai", exploringWorker...)
	t.Setenv("OPENAI_API_KEY", "sk-test")
	cfg := proposeConfig(t, url, map[string]any{"compaction": map[string]any{"strategy": "explore", "keepRecentTokens": 8000}})
	before := dirState(t, filepath.Dir(path))

	// The session's cwd is not under the test's directory: as for pith
	// compact, --workspace names it (pi runs pith in its own cwd).
	events := proposeCLI(t, map[string]any{}, "compact", "--config", cfg, "--workspace", ws, path)
	res := events[len(events)-1]
	if res.Outcome != propose.OutcomeCompacted || res.Strategy != "explore" {
		t.Fatalf("result %+v", res)
	}
	if len(res.Entries) != 1 || res.Entries[0].CustomType != explore.AutoReadCustomType ||
		!strings.Contains(string(res.Entries[0].Content), "stripBOM") {
		t.Fatalf("entries %+v", res.Entries)
	}
	if !strings.Contains(strings.Join(stages(events), ","), "explore") {
		t.Errorf("no explore progress: %v", stages(events))
	}
	if after := dirState(t, filepath.Dir(path)); after != before {
		t.Fatal("the session's directory changed")
	}

	asPi := writeAsPi(t, path, res)
	// The same compaction saved by Pith itself: a fresh worker script.
	_, url2 := startWorkerServer(t, "openai", exploringWorker...)
	cfg2 := proposeConfig(t, url2, map[string]any{"compaction": map[string]any{"strategy": "explore", "keepRecentTokens": 8000}})
	if _, stderr, code := runCLI(t, "compact", "--config", cfg2, "--workspace", ws, path); code != 0 {
		t.Fatalf("compact: %s", stderr)
	}
	llm := func(p string) string {
		out, stderr, code := runCLI(t, "context", "--llm", p)
		if code != 0 {
			t.Fatalf("context: %s", stderr)
		}
		// pi stamps the entries it writes with its own time.
		return stamps.ReplaceAllString(out, `"$1":0`)
	}
	if a, b := llm(asPi), llm(path); a != b {
		i := 0
		for i < len(a) && i < len(b) && a[i] == b[i] {
			i++
		}
		t.Fatalf("pi's file reads differently from Pith's own, from byte %d:\npi   %.400s\npith %.400s", i, a[max(0, i-100):], b[max(0, i-100):])
	}
}

// TestProposeNavigate: a plugin's branch summary and label are the result
// of a navigation from pi's leaf; without summarize the plugins are asked
// and no summary is made; nothing is written.
func TestProposeNavigate(t *testing.T) {
	bin := scripted(t)
	path := copyFile(t, "../../examples/demo-session.jsonl")
	ids := entryIDs(t, path)
	cfg := proposeConfig(t, "", nil, map[string]any{"name": "notes", "path": bin, "events": []string{"session_before_tree"},
		"args": []string{"-name", "notes", "-before-tree", "summary"}})
	before := dirState(t, filepath.Dir(path))
	req := map[string]any{"targetId": ids[4], "oldLeafId": ids[len(ids)-1], "summarize": true}
	events := proposeCLI(t, req, "navigate", "--config", cfg, path)
	res := events[len(events)-1]
	if res.Outcome != propose.OutcomeSummarized || res.Summary == nil || res.Summary.Summary != "notes branch summary" ||
		res.Label != "notes" || res.Plugin != "notes" {
		t.Fatalf("result %+v", res)
	}
	req["summarize"] = false
	events = proposeCLI(t, req, "navigate", "--config", cfg, path)
	if res := events[len(events)-1]; res.Outcome != propose.OutcomeNone || res.Label != "notes" {
		t.Fatalf("without summarize: %+v", res)
	}
	if after := dirState(t, filepath.Dir(path)); after != before {
		t.Fatal("the session's directory changed")
	}
}

func entryIDs(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n"))[1:] {
		var e struct {
			ID string `json:"id"`
		}
		json.Unmarshal(line, &e)
		ids = append(ids, e.ID)
	}
	return ids
}

// TestProposeNotify: session_compact and session_tree reach the plugins
// with what pi saved and fromExtension.
func TestProposeNotify(t *testing.T) {
	bin := scripted(t)
	rec := filepath.Join(t.TempDir(), "record")
	cfg := proposeConfig(t, "", nil, map[string]any{"name": "audit", "path": bin, "events": []string{"session_compact", "session_tree"},
		"args": []string{"-name", "audit", "-compact", "record", "-tree", "record", "-record", rec}})
	path := copyFile(t, "../../examples/demo-session.jsonl")
	ids := entryIDs(t, path)
	entry := map[string]any{"type": "compaction", "id": "c0mpact1", "parentId": ids[len(ids)-1], "summary": "pi saved this",
		"firstKeptEntryId": ids[3], "tokensBefore": 100, "fromHook": true}
	proposeCLI(t, map[string]any{"compactionEntry": entry, "fromExtension": true}, "notify-compact", "--config", cfg, path)
	proposeCLI(t, map[string]any{"newLeafId": ids[2], "oldLeafId": ids[len(ids)-1], "summaryEntry": nil}, "notify-tree", "--config", cfg, path)
	data, err := os.ReadFile(rec)
	if err != nil {
		t.Fatal(err)
	}
	got := string(data)
	if !strings.Contains(got, "audit session_compact ") || !strings.Contains(got, "pi saved this") || !strings.Contains(got, `"fromExtension":true`) ||
		!strings.Contains(got, "audit session_tree ") || !strings.Contains(got, ids[2]) {
		t.Fatalf("record:\n%s", got)
	}
}

// TestProposeBadRequest: a request that is not JSON, or an unknown
// operation, is one error event and exit 2.
func TestProposeBadRequest(t *testing.T) {
	path := copyFile(t, "../../examples/demo-session.jsonl")
	for _, args := range [][]string{{"compact", path}, {"explode", path}} {
		var out, errb bytes.Buffer
		code := runIn(append([]string{"propose", "--config", proposeConfig(t, "", nil)}, args...), strings.NewReader("{not json"), &out, &errb)
		events := parseEvents(t, out.Bytes())
		if code != exitUsage || len(events) != 1 || events[0].Type != propose.TypeError {
			t.Errorf("%v: exit %d, %s", args, code, out.String())
		}
	}
}

// TestProposeSIGTERM: SIGTERM while the summarizer is working stops
// `pith propose` at once — an error event, exit 130 — and nothing is
// written.
func TestProposeSIGTERM(t *testing.T) {
	srv, url := startSummaryServer(t, "", true)
	cfg := proposeConfig(t, url, nil)
	path := copyFile(t, "../../examples/demo-session.jsonl")
	before := dirState(t, filepath.Dir(path))
	cmd := cliChild("propose", "compact", "--config", cfg, path)
	cmd.Env = append(cmd.Env, "OPENAI_API_KEY=sk-test")
	cmd.Stdin = strings.NewReader(`{"reason":"threshold"}`)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	<-srv.started
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != exitInterrupted {
		t.Fatalf("exit %d (%v): %s", code, err, errb.String())
	}
	events := parseEvents(t, out.Bytes())
	if len(events) == 0 || events[len(events)-1].Type != propose.TypeError {
		t.Fatalf("no error event last: %s", out.String())
	}
	if after := dirState(t, filepath.Dir(path)); after != before {
		t.Fatal("the session's directory changed")
	}
}

// TestProposeHonoursPiCut: Pith's own preparation decides the cut unless
// compaction.honourPiCut (or --honour-pi-cut) says to keep from pi's
// firstKeptEntryId.
func TestProposeHonoursPiCut(t *testing.T) {
	path := copyFile(t, "../../examples/demo-session.jsonl")
	ids := entryIDs(t, path)
	req := map[string]any{"preparation": map[string]any{"firstKeptEntryId": ids[3]}}
	own := proposeCLI(t, req, "compact", "--config", proposeConfig(t, "", nil), path)
	if got := own[len(own)-1].Compaction.FirstKeptEntryID; got == ids[3] {
		t.Fatalf("Pith's own cut is pi's (%s): the test proves nothing", got)
	}
	for _, args := range [][]string{
		{"--config", proposeConfig(t, "", map[string]any{"compaction": map[string]any{"honourPiCut": true}})},
		{"--config", proposeConfig(t, "", nil), "--honour-pi-cut"},
	} {
		ev := proposeCLI(t, req, append(append([]string{"compact"}, args...), path)...)
		if got := ev[len(ev)-1].Compaction.FirstKeptEntryID; got != ids[3] {
			t.Errorf("%v: kept from %s, want pi's %s", args, got, ids[3])
		}
	}
}

// TestProposeFallsBackToPiCut: when Pith's own cut leaves nothing to
// compact (its keepRecentTokens is larger than the session) but pi
// compacts, the proposal keeps from pi's firstKeptEntryId, with a
// warning, instead of leaving pi to compact without Pith; without pi's
// cut the answer is "nothing".
func TestProposeFallsBackToPiCut(t *testing.T) {
	path := copyFile(t, "../../examples/demo-session.jsonl")
	ids := entryIDs(t, path)
	cfg := proposeConfig(t, "", map[string]any{"compaction": map[string]any{"keepRecentTokens": 500000}})
	ev := proposeCLI(t, map[string]any{}, "compact", "--config", cfg, path)
	if got := ev[len(ev)-1]; got.Outcome != propose.OutcomeNothing {
		t.Fatalf("without pi's cut: %+v", got)
	}
	ev = proposeCLI(t, map[string]any{"preparation": map[string]any{"firstKeptEntryId": ids[3]}}, "compact", "--config", cfg, path)
	got := ev[len(ev)-1]
	if got.Outcome != propose.OutcomeCompacted || got.Compaction.FirstKeptEntryID != ids[3] {
		t.Fatalf("with pi's cut: %+v", got)
	}
	warned := false
	for _, e := range ev {
		warned = warned || e.Type == propose.TypeWarning && strings.Contains(e.Message, ids[3])
	}
	if !warned {
		t.Error("no warning about the fallback")
	}
}
