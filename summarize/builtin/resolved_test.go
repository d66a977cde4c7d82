package builtin

import (
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/core/summary"
)

// blockedCommand is a Blocked line about a command: "`bash` `CMD`: …".
var blockedCommand = regexp.MustCompile("^- `[^`]+` `([^`]+)`: ")

// checkNotStale fails when the summary reports as blocked what it also
// reports as done: a command whose latest run succeeded, or anything with
// "Resolve the blocking error above" while nothing is blocked.
func checkNotStale(t *testing.T, text string) {
	t.Helper()
	blocked := section(text, "### Blocked")
	done := section(text, "### Done")
	for _, l := range strings.Split(blocked, "\n") {
		if m := blockedCommand.FindStringSubmatch(l); m != nil && strings.Contains(done, "Ran `"+m[1]+"` (ok)") {
			t.Errorf("blocked by a command whose latest run succeeded: %s", l)
		}
	}
	if strings.TrimSpace(blocked) == "(none)" && strings.Contains(section(text, "## Next Steps"), "Resolve the blocking error") {
		t.Error("a next step resolves a blocking error, and nothing is blocked")
	}
}

func summarizeMessages(t *testing.T, msgs []session.Message) string {
	t.Helper()
	res, err := New(Options{}).Summarize(context.Background(),
		summary.Request{Purpose: summary.PurposeHistory, MaxTokens: 13107, Source: &summary.Transcript{Messages: msgs}})
	if err != nil {
		t.Fatal(err)
	}
	return res.Text
}

// TestBuiltinDemoResolvedPanic: in the demo session the importer panics,
// the assistant edits the reader, `go test ./...` passes and it says
// "Fixed." — the panic is reported as resolved, not as blocking, and no
// next step asks to resolve it.
func TestBuiltinDemoResolvedPanic(t *testing.T) {
	f, err := session.Load("../../examples/demo-session.jsonl")
	if err != nil {
		t.Skipf("demo session: %v", err)
	}
	tree := session.NewTree(f.Entries)
	var msgs []session.Message
	for _, m := range tree.BuildContext(session.LeafDefault).Messages {
		if m.EntryID == "70e22773" { // the next request: the first task is over
			break
		}
		msgs = append(msgs, m)
	}
	text := summarizeMessages(t, msgs)
	checkHistoryShape(t, text)
	checkNotStale(t, text)
	if b := strings.TrimSpace(section(text, "### Blocked")); b != "(none)" {
		t.Errorf("Blocked:\n%s", b)
	}
	if !strings.Contains(section(text, "## Critical Context"), "Earlier error (resolved later) from `bash`") ||
		!strings.Contains(text, "panic: assignment to entry in nil map") {
		t.Errorf("the panic is not reported as resolved:\n%s", text)
	}
	checkTextGolden(t, filepath.Join("testdata", "demo-first-task.history.md"), text)

	// The whole main path: the report task finished after the abandoned
	// cache branch; its state is the latest one.
	all := summarizeMessages(t, tree.BuildContext(session.LeafDefault).Messages)
	checkNotStale(t, all)
	checkTextGolden(t, filepath.Join("testdata", "demo.history.md"), all)
}

// TestBuiltinPiFixturesNotStale runs the consistency check on both pi
// fixtures (golden: before-compaction's in TestBuiltinPiFixtures,
// large-session's here).
func TestBuiltinPiFixturesNotStale(t *testing.T) {
	for _, name := range []string{"before-compaction.v3.jsonl", "large-session.v3.jsonl"} {
		t.Run(name, func(t *testing.T) {
			text := summarizeMessages(t, loadPiContext(t, name).Messages)
			checkNotStale(t, text)
			if name == "large-session.v3.jsonl" {
				checkTextGolden(t, filepath.Join("testdata", "large-session.history.md"), text)
			}
		})
	}
}

// TestBuiltinFixClaimNeedsWork: "Fixed" right after a failure, with no
// successful step between, leaves the failure blocked; a later successful
// run of the same command line (another cd prefix, run by the user)
// resolves it.
func TestBuiltinFixClaimNeedsWork(t *testing.T) {
	failing := []session.Message{
		userMsg("Make the stats command print JSON."),
		asstMsg("", call{"c1", "bash", cmdArgs("cd /repo && go test ./cmd/...")}),
		resultMsg("c1", "bash", "--- FAIL: TestStats (0.00s)\nFAIL\n\nCommand exited with code 1", true),
		asstMsg("Fixed the encoder."),
	}
	text := summarizeMessages(t, failing)
	if !strings.Contains(section(text, "### Blocked"), "TestStats") {
		t.Errorf("an unbacked claim resolved the failure:\n%s", text)
	}
	rerun := append(failing[:3:3],
		rawMsg("bashExecution", `{"role":"bashExecution","command":"cd /repo/ && go test ./cmd/...","output":"ok","exitCode":0,"cancelled":false,"truncated":false}`),
		asstMsg("The suite is green."))
	text = summarizeMessages(t, rerun)
	if strings.TrimSpace(section(text, "### Blocked")) != "(none)" || !strings.Contains(text, "Earlier error (resolved later)") {
		t.Errorf("the rerun did not resolve the failure:\n%s", text)
	}
}
