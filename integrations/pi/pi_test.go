package pi_test

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestManualCompaction: /compact in pi (the RPC compact command) runs
// Pith's pipeline: a plugin's context line reaches Pith's summarizer,
// pi saves Pith's summary as its compaction entry, and Pith's plugins get
// session_compact with the entry pi saved.
func TestManualCompaction(t *testing.T) {
	w := newWorld(t, piSettings{})
	record := filepath.Join(w.dir, "notes.jsonl")
	audit := filepath.Join(w.dir, "audit.jsonl")
	w.pithConf(nil,
		w.plugin("ctxline", "scripted", "--name", "ctxline", "--compacting", "context", "--compact", "record", "--record", record),
		w.plugin("audit", "audit", "--file", audit))
	pi := w.startRPC()
	pi.converse(4)
	r := pi.send(map[string]any{"type": "compact"})
	if r["success"] != true {
		t.Fatalf("compact: %v\nnotices: %q", r, pi.notices())
	}
	data, _ := r["data"].(map[string]any)
	if summary, _ := data["summary"].(string); !strings.Contains(summary, "PITH-SUMMARY") {
		t.Fatalf("pi's compaction summary is not Pith's: %q", summary)
	}
	if _, summaries := w.model.counts(); summaries != 0 {
		t.Fatalf("pi asked its own model for %d summaries", summaries)
	}
	bodies := w.summarizer.requests()
	if len(bodies) != 1 || !strings.Contains(bodies[0], "ctxline: ") {
		t.Fatalf("Pith's summarizer did not get the plugin's context line: %d requests\n%.2000s", len(bodies), strings.Join(bodies, "\n"))
	}
	file := pi.sessionFile()
	pi.stop()
	entries := w.checkFile(file)
	comps := ofType(entries, "compaction")
	if len(comps) != 1 || !strings.Contains(comps[0].Summary, "PITH-SUMMARY") || !comps[0].FromHook {
		t.Fatalf("compaction entries: %+v", comps)
	}
	notes := readLines(t, record)
	if !containsLine(notes, "session_compact", comps[0].ID) {
		t.Fatalf("the plugin was not told of the compaction %s: %q", comps[0].ID, notes)
	}
	if a := readLines(t, audit); len(a) != 1 || !strings.Contains(a[0], comps[0].ID) {
		t.Fatalf("audit: %q", a)
	}
}

// TestThresholdCompaction: pi's own threshold check (usage over
// contextWindow − reserveTokens after a turn) starts an automatic
// compaction, which goes through Pith, told it is one. The message the
// instructions-keeper plugin injects is written by pi after its compaction
// entry without starting a turn. The extension is installed as a pi
// package here (`pi install`), as a user installs it.
func TestThresholdCompaction(t *testing.T) {
	w := newWorld(t, piSettings{contextWindow: 4000, reserveTokens: 1000, keepRecentTokens: 150})
	if err := os.WriteFile(filepath.Join(w.cwd, "AGENTS.md"), []byte("- STANDING-RULE: run the tests before committing.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w.pithConf(map[string]any{"reserveTokens": 1000}, w.plugin("instructions-keeper", "instructions-keeper"))
	w.install()
	pi := w.startRPC()
	pi.converse(3)
	w.model.setPromptTokens(3500)
	pi.prompt("One more step, and the context is nearly full.")
	end := pi.await("the threshold compaction's end", func(ev map[string]any) bool {
		return ev["type"] == "compaction_end" && ev["reason"] == "threshold"
	})
	res, _ := end["result"].(map[string]any)
	if summary, _ := res["summary"].(string); !strings.Contains(summary, "PITH-SUMMARY") {
		t.Fatalf("the threshold compaction is not Pith's: %v\nnotices: %q", end, pi.notices())
	}
	pi.idle()
	replies, _ := w.model.counts()
	file := pi.sessionFile()
	pi.stop()
	entries := w.checkFile(file)
	comps := ofType(entries, "compaction")
	if len(comps) != 1 || !strings.Contains(string(comps[0].Details), `"reason":"threshold"`) {
		t.Fatalf("compactions: %+v", comps)
	}
	last := entries[len(entries)-1]
	if last.Type != "custom_message" || last.CustomType != "instructions-keeper/instructions" || *last.ParentID != comps[0].ID ||
		!strings.Contains(string(last.Content), "STANDING-RULE") {
		t.Fatalf("the injected message is not after the compaction: %+v", last)
	}
	if replies != 4 {
		t.Fatalf("pi's model was asked %d times for 4 prompts: writing the message started a turn", replies)
	}
}

// TestVeto: a plugin's cancel of session_before_compact is pi's cancel,
// its reason shown to pi's user; nothing is written and pi does not
// summarize by itself.
func TestVeto(t *testing.T) {
	w := newWorld(t, piSettings{})
	w.pithConf(nil, w.plugin("keeper", "scripted", "--name", "keeper", "--before-compact", "cancel"))
	pi := w.startRPC()
	pi.converse(3)
	r := pi.send(map[string]any{"type": "compact"})
	if r["success"] != false || !strings.Contains(fmt.Sprint(r["error"]), "cancelled") {
		t.Fatalf("compact: %v", r)
	}
	if !containsLine(pi.notices(), "warning", "keeper says no") {
		t.Fatalf("the plugin's reason was not shown: %q", pi.notices())
	}
	if _, summaries := w.model.counts(); summaries != 0 || len(w.summarizer.requests()) != 0 {
		t.Fatalf("a summary was asked for (pi: %d, Pith: %d)", summaries, len(w.summarizer.requests()))
	}
	file := pi.sessionFile()
	pi.stop()
	if comps := ofType(w.checkFile(file), "compaction"); len(comps) != 0 {
		t.Fatalf("compactions after a veto: %+v", comps)
	}
}

// TestExplore: with the exploring strategy, the worker's auto-read file is
// written by pi after its compaction entry (a custom_message through the
// extension API), and pi's live context shows it.
func TestExplore(t *testing.T) {
	w := newWorld(t, piSettings{})
	if err := os.WriteFile(filepath.Join(w.cwd, "notes.md"), []byte("AUTO-READ-CONTENT: the importer plan.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w.summarizer.worker = [][][2]string{
		{{"mark_read_required", `{"path":"notes.md"}`}},
		{{"write_summary", `{"text":"## Goal\nPITH-EXPLORED: the importer."}`}},
	}
	w.pithConf(map[string]any{"strategy": "explore", "retainedTokens": 150})
	pi := w.startRPC()
	pi.converse(4)
	r := pi.send(map[string]any{"type": "compact"})
	if r["success"] != true {
		t.Fatalf("compact: %v\nnotices: %q", r, pi.notices())
	}
	msgs := pi.send(map[string]any{"type": "get_messages"})
	live, _ := json.Marshal(msgs["data"])
	if !strings.Contains(string(live), "AUTO-READ-CONTENT") || !strings.Contains(string(live), "pith.compaction.autoRead") {
		t.Fatalf("pi's live context lacks the auto-read file: %.3000s", live)
	}
	file := pi.sessionFile()
	pi.stop()
	entries := w.checkFile(file)
	var comp, auto *sessionEntry
	for i := range entries {
		switch {
		case entries[i].Type == "compaction":
			comp = &entries[i]
		case entries[i].Type == "custom_message" && entries[i].CustomType == "pith.compaction.autoRead":
			auto = &entries[i]
		}
	}
	if comp == nil || !strings.Contains(comp.Summary, "PITH-EXPLORED") || auto == nil || *auto.ParentID != comp.ID ||
		!strings.Contains(string(auto.Content), "AUTO-READ-CONTENT") {
		t.Fatalf("compaction %+v, auto-read %+v", comp, auto)
	}
	view := piView(t, file)
	if !strings.Contains(view, "AUTO-READ-CONTENT") {
		t.Fatalf("pi's reading of the file lacks the auto-read file")
	}
}

// TestTreeNavigation: navigateTree through pi's SDK with a summary asked
// for: the branch-notes plugin's summary is what pi saves, with the label
// asked for, and Pith's plugins get session_tree with the entry pi saved.
func TestTreeNavigation(t *testing.T) {
	w := newWorld(t, piSettings{})
	record := filepath.Join(w.dir, "tree.jsonl")
	w.pithConf(nil, w.plugin("branch-notes", "branch-notes"),
		w.plugin("watcher", "scripted", "--name", "watcher", "--tree", "record", "--record", record))
	r := w.sdk("tree", map[string]any{"label": "back-to-start"}, nil)
	se, _ := r["summaryEntry"].(map[string]any)
	summary, _ := se["summary"].(string)
	if r["cancelled"] != false || !strings.Contains(summary, "branch-notes plugin") || se["fromHook"] != true {
		t.Fatalf("navigation: %v", r)
	}
	if r["label"] != "back-to-start" {
		t.Fatalf("label: %v", r["label"])
	}
	if _, summaries := w.model.counts(); summaries != 0 {
		t.Fatalf("pi summarized the branch itself")
	}
	id, _ := se["id"].(string)
	if notes := readLines(t, record); !containsLine(notes, "session_tree", id) {
		t.Fatalf("the plugin was not told of the navigation to %s: %q", id, notes)
	}
	entries := w.checkFile(r["file"].(string))
	if bs := ofType(entries, "branch_summary"); len(bs) != 1 || bs[0].ID != id {
		t.Fatalf("branch summaries: %+v", bs)
	}

	// Without Pith pi summarizes the branch by itself; under the SDK there
	// is no UI, so the one warning is on stderr.
	w2 := newWorld(t, piSettings{})
	w2.env = []string{"PITH_BIN=" + filepath.Join(w2.dir, "no-such-pith")}
	r = w2.sdk("tree", map[string]any{"label": "again"}, nil)
	se, _ = r["summaryEntry"].(map[string]any)
	if s, _ := se["summary"].(string); r["cancelled"] != false || !strings.Contains(s, piOwnSummary) || se["fromHook"] == true {
		t.Fatalf("navigation without Pith: %v", r)
	}
	if stderr := r["stderr"].(string); strings.Count(stderr, "Pith failed") != 1 || !strings.Contains(stderr, "pi summarizes the branch by itself") {
		t.Fatalf("stderr: %q", stderr)
	}
	w2.checkFile(r["file"].(string))
}

// TestFailures: Pith missing, crashing, answering garbage or hanging past
// PITH_TIMEOUT: pi compacts by itself, with one notice, and the hanging
// Pith's work is stopped.
func TestFailures(t *testing.T) {
	w := newWorld(t, piSettings{})
	w.pithConf(nil)
	mode := filepath.Join(w.dir, "mode")
	// PITH_BIN for the test: a Pith that crashes or answers garbage, or
	// the real one (which hangs on the held summarizer).
	script := filepath.Join(w.dir, "pith-switch")
	os.WriteFile(script, []byte(`#!/bin/sh
case "$(cat `+mode+`)" in
missing) exec `+filepath.Join(w.dir, "no-such-pith")+` "$@" ;;
crash) printf '{"type":"progress","message":"starting"}
'; kill -SEGV $$ ;;
garbage) echo 'this is not JSON'; exit 0 ;;
badcut) echo '{"type":"result","outcome":"compacted","compaction":{"summary":"x","firstKeptEntryId":"nowhere","tokensBefore":1}}' ;;
*) exec `+w.pith+` "$@" ;;
esac
`), 0o755)
	w.env = []string{"PITH_BIN=" + script, "PITH_TIMEOUT=5s"}
	pi := w.startRPC()
	for i, c := range []struct{ mode, notice string }{
		{"crash", "SIGSEGV"},
		{"garbage", "not JSON"},
		{"badcut", "not on pi's current branch"},
		{"hang", "did not answer within 5s"},
	} {
		os.WriteFile(mode, []byte(c.mode), 0o644)
		w.summarizer.mu.Lock()
		w.summarizer.hold = c.mode == "hang"
		w.summarizer.mu.Unlock()
		before := len(pi.notices())
		pi.converse(2)
		r := pi.send(map[string]any{"type": "compact"})
		data, _ := r["data"].(map[string]any)
		if r["success"] != true || data["summary"] != piOwnSummary {
			t.Fatalf("%s: pi did not compact by itself: %v", c.mode, r)
		}
		if _, summaries := w.model.counts(); summaries != i+1 {
			t.Fatalf("%s: pi summarized %d times", c.mode, summaries)
		}
		got := warnings(pi.notices()[before:])
		if len(got) != 1 || !strings.Contains(got[0], c.notice) || !strings.Contains(got[0], "pi compacts by itself") {
			t.Fatalf("%s: notices %q", c.mode, got)
		}
		if c.mode == "hang" {
			<-w.summarizer.arrived
			<-w.summarizer.gone // Pith's summarizer request was cancelled
		}
	}
	file := pi.sessionFile()
	pi.stop()
	if comps := ofType(w.checkFile(file), "compaction"); len(comps) != 4 {
		t.Fatalf("%d compactions", len(comps))
	}

	// No pith at all: a pi of its own, PITH_BIN naming nothing.
	w2 := newWorld(t, piSettings{})
	w2.env = []string{"PITH_BIN=" + filepath.Join(w2.dir, "no-such-pith")}
	pi2 := w2.startRPC()
	pi2.converse(3)
	r := pi2.send(map[string]any{"type": "compact"})
	if data, _ := r["data"].(map[string]any); r["success"] != true || data["summary"] != piOwnSummary {
		t.Fatalf("missing: %v", r)
	}
	if got := warnings(pi2.notices()); len(got) != 1 || !strings.Contains(got[0], "was not found") {
		t.Fatalf("missing: notices %q", got)
	}
}

// TestPrintMode: in print mode (pi -p) pi has no UI, and exits once its
// answer is printed while an automatic compaction may still run: the
// extension's one warning goes to stderr, stdout carries only pi's answer,
// and pi compacts by itself when Pith is missing.
func TestPrintMode(t *testing.T) {
	w := newWorld(t, piSettings{contextWindow: 4000, reserveTokens: 1000, keepRecentTokens: 150})
	w.env = []string{"PITH_BIN=" + filepath.Join(w.dir, "no-such-pith")}
	var stderrs []string
	for i := range 4 {
		if i == 3 {
			w.model.setPromptTokens(3500)
		}
		args := []string{w.piCLI, "-p", "--offline", "-e", w.extension(), "--provider", "loop", "--model", "loop-model",
			"--session-dir", w.sessions, "--no-tools", "--no-skills", "--no-context-files", "--no-prompt-templates", "--no-themes"}
		if i > 0 {
			args = append(args, "-c")
		}
		cmd := exec.Command("node", append(args, fmt.Sprintf("Print step %d: %s", i+1, strings.Repeat("carry on with the importer. ", 10)))...)
		cmd.Dir, cmd.Env = w.cwd, w.piEnv()
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("pi -p: %v\n%s", err, stderr.String())
		}
		if !strings.HasPrefix(string(out), fmt.Sprintf("Reply %d.", i+1)) {
			t.Fatalf("stdout is not pi's answer alone: %q", out)
		}
		stderrs = append(stderrs, stderr.String())
	}
	all := strings.Join(stderrs, "")
	if strings.Count(all, "Pith failed") != 1 || !strings.Contains(all, "pi compacts by itself") || strings.Contains(all, "Extension error") {
		t.Fatalf("stderr: %q", stderrs)
	}
	files, _ := filepath.Glob(filepath.Join(w.sessions, "*.jsonl"))
	if len(files) != 1 {
		t.Fatalf("session files: %v", files)
	}
	comps := ofType(w.checkFile(files[0]), "compaction")
	if len(comps) != 1 || comps[0].Summary != piOwnSummary {
		t.Fatalf("compactions: %+v", comps)
	}
}

// TestAbort: Escape (abortCompaction) while Pith's summarizer works stops
// Pith — its request to the summarizer is cancelled — and pi writes
// nothing.
func TestAbort(t *testing.T) {
	w := newWorld(t, piSettings{})
	w.pithConf(nil)
	pi := w.startRPC()
	pi.converse(3)
	file := pi.sessionFile()
	pi.stop()
	before, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
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
	r := <-done
	if r["ok"] != false || !strings.Contains(fmt.Sprint(r["error"]), "cancelled") {
		t.Fatalf("abort: %v", r)
	}
	after, _ := os.ReadFile(file)
	if string(after) != string(before) {
		t.Fatalf("the file changed after an aborted compaction")
	}
	if _, summaries := w.model.counts(); summaries != 0 {
		t.Fatalf("pi summarized after Escape")
	}
	w.checkFile(file)
}

// warnings are the notices shown as warnings (progress is shown as info).
func warnings(notices []string) []string {
	var out []string
	for _, n := range notices {
		if strings.HasPrefix(n, "warning: ") || strings.HasPrefix(n, "error: ") {
			out = append(out, n)
		}
	}
	return out
}

// piView is pi's reading of file, as JSON text.
func piView(t *testing.T, file string) string {
	t.Helper()
	out, err := exec.Command("node", filepath.Join("test", "piview.mjs"), file).Output()
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func readLines(t *testing.T, file string) []string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v", err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

func containsLine(lines []string, subs ...string) bool {
	for _, l := range lines {
		ok := true
		for _, s := range subs {
			ok = ok && strings.Contains(l, s)
		}
		if ok {
			return true
		}
	}
	return false
}
