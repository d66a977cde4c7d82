package main

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// demo ids: f75e41fb is the assistant message the cache branch (b73f2c05…)
// and the final branch (f8166e6a…) both grow from; 9b22e738 the last entry.
const (
	demoBranchPoint = "f75e41fb"
	demoAbandoned   = "b73f2c05"
	demoLeaf        = "9b22e738"
	demoUserMessage = "85790ee4"
)

func TestNavigateDryRunJSON(t *testing.T) {
	path := copyFile(t, "../../examples/demo-session.jsonl")
	before, _ := os.ReadFile(path)
	out, stderr, code := runCLI(t, "navigate", path, "--to", demoAbandoned, "--dry-run", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var got map[string]any
	dec := json.NewDecoder(strings.NewReader(out))
	if err := dec.Decode(&got); err != nil || dec.More() {
		t.Fatalf("not one object: %q", out)
	}
	want := []string{"commonAncestorId", "entriesToSummarize", "messages", "tokens", "readFiles", "modifiedFiles"}
	if len(got) != len(want) {
		t.Fatalf("keys %v, want exactly %v", got, want)
	}
	for _, k := range want {
		if _, ok := got[k]; !ok {
			t.Fatalf("missing %s", k)
		}
	}
	if got["commonAncestorId"] != demoBranchPoint || got["entriesToSummarize"].(float64) < 5 {
		t.Fatalf("got %v", got)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Fatal("dry run changed the file")
	}
}

// TestNavigateSummarizeThenContext: after `pith navigate --summarize`,
// `pith context` shows the branch summary where docs/behaviour.md §2 puts it: as the
// last message, after the path up to the new position.
func TestNavigateSummarizeThenContext(t *testing.T) {
	path := copyFile(t, "../../examples/demo-session.jsonl")
	out, stderr, code := runCLI(t, "navigate", path, "--to", demoBranchPoint, "--summarize", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var res struct {
		SummaryEntryID string `json:"summaryEntryId"`
		NewLeafID      string `json:"newLeafId"`
	}
	json.Unmarshal([]byte(out), &res)
	if res.SummaryEntryID == "" || res.NewLeafID != res.SummaryEntryID {
		t.Fatalf("no summary entry: %s", out)
	}
	c := contextOf(t, path)
	if c.Roles[len(c.Roles)-1] != "branchSummary" {
		t.Fatalf("branch summary not last: %v", c.Roles)
	}
	out, _, _ = runCLI(t, "tree", path)
	if !strings.Contains(out, "[branch summary] from "+demoLeaf) {
		t.Fatalf("tree does not mark the summary and where it came from:\n%s", out)
	}
}

func TestNavigateToUserMessageAndErrors(t *testing.T) {
	path := copyFile(t, "../../examples/demo-session.jsonl")
	out, stderr, code := runCLI(t, "navigate", path, "--to", demoUserMessage)
	if code != 0 || !strings.Contains(out, "Skip the cache idea") {
		t.Fatalf("exit %d: %s%s", code, out, stderr)
	}
	before, _ := os.ReadFile(path)
	_, stderr, code = runCLI(t, "navigate", path, "--to", "deadbeef")
	if code == 0 || !strings.Contains(stderr, "deadbeef") || strings.Count(stderr, "\n") != 1 {
		t.Fatalf("unknown id: exit %d, %q", code, stderr)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Fatal("a failed navigation changed the file")
	}
}
