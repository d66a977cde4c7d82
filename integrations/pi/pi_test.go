package pi_test

import (
	"encoding/json"
	"os"
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

var _ = json.Marshal
