package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/pith-dev/pith/internal/testproc"
	"github.com/pith-dev/pith/sdk/sdktest"
	"github.com/tidwall/gjson"
)

// navigateLabel runs pith navigate and returns the summary entry id it
// reports and the label entries it appended.
func navigateLabel(t *testing.T, path string, args ...string) (summaryID string, labels []gjson.Result) {
	t.Helper()
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out, stderr, code := runCLI(t, append([]string{"navigate", path, "--json"}, args...)...)
	if code != 0 {
		t.Fatalf("navigate: exit %d: %s", code, stderr)
	}
	var res struct {
		SummaryEntryID string `json:"summaryEntryId"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(data[len(before):])), "\n") {
		if e := gjson.Parse(line); e.Get("type").String() == "label" {
			labels = append(labels, e)
		}
	}
	return res.SummaryEntryID, labels
}

// TestNavigateLabelLandsWherePiPutsIt: a navigation label — --label, or a
// session_before_tree plugin's — labels the branch summary entry when one
// is written, as pi 0.73.1 does (AgentSession.navigateTree: the label
// entry's targetId is the summary's id, its parent the summary), and the
// target when none is (pi: targetId the target, parent the new position).
// Before, it always labelled the target.
func TestNavigateLabelLandsWherePiPutsIt(t *testing.T) {
	t.Run("--label with a summary", func(t *testing.T) {
		path := copyFile(t, "../../examples/demo-session.jsonl")
		sum, labels := navigateLabel(t, path, "--to", demoBranchPoint, "--summarize", "--label", "tried caching")
		if sum == "" || len(labels) != 1 {
			t.Fatalf("summary %q, labels %v", sum, labels)
		}
		if l := labels[0]; l.Get("targetId").String() != sum || l.Get("parentId").String() != sum || l.Get("label").String() != "tried caching" {
			t.Errorf("label entry %s, want the summary entry %s labelled", l.Raw, sum)
		}
	})
	t.Run("--label without a summary", func(t *testing.T) {
		path := copyFile(t, "../../examples/demo-session.jsonl")
		sum, labels := navigateLabel(t, path, "--to", demoUserMessage, "--no-summarize", "--label", "retry here")
		if sum != "" || len(labels) != 1 {
			t.Fatalf("summary %q, labels %v", sum, labels)
		}
		// A user message: the conversation continues from its parent,
		// and the label names the message itself.
		parent := gjson.Get(runTreeJSON(t, path), `entries.#(id=="`+demoUserMessage+`").parentId`).String()
		if l := labels[0]; l.Get("targetId").String() != demoUserMessage || l.Get("parentId").String() != parent {
			t.Errorf("label entry %s, want target %s below %s", l.Raw, demoUserMessage, parent)
		}
	})
	t.Run("a plugin's label with its summary", func(t *testing.T) {
		bin, err := sdktest.BuildTo(t.TempDir(), "github.com/pith-dev/pith/internal/testplugins/scripted")
		if err != nil {
			t.Fatal(err)
		}
		tmp, err := os.MkdirTemp("", "pt")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(tmp) })
		t.Setenv("TMPDIR", tmp)
		cfg := writeConfig(t, map[string]any{"name": "brancher", "path": bin, "events": []string{"session_before_tree"},
			"args": []string{"-name", "brancher", "-before-tree", "summary"}})
		path := copyFile(t, "../../examples/demo-session.jsonl")
		sum, labels := navigateLabel(t, path, "--config", cfg, "--to", demoBranchPoint, "--summarize")
		if sum == "" || len(labels) != 1 {
			t.Fatalf("summary %q, labels %v", sum, labels)
		}
		if l := labels[0]; l.Get("targetId").String() != sum || l.Get("label").String() != "brancher" {
			t.Errorf("label entry %s, want the plugin's summary %s labelled", l.Raw, sum)
		}
		testproc.RequireNoChildren(t)
	})
}
