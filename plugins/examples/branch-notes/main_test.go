package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pith-dev/pith/hooks"
	"github.com/pith-dev/pith/sdk"
	"github.com/pith-dev/pith/sdk/sdktest"
)

var update = flag.Bool("update", false, "rewrite the golden files")

var binary string

func TestMain(m *testing.M) {
	flag.Parse()
	dir, err := os.MkdirTemp("", "branch-notes-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary, err = sdktest.BuildTo(dir, ".")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func fixture(t *testing.T) []json.RawMessage {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "branch.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var out []json.RawMessage
	for _, l := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		out = append(out, json.RawMessage(l))
	}
	return out
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Fatalf("%s differs (go test -update rewrites it)\n got:\n%s\nwant:\n%s", name, got, want)
	}
}

func TestBranchSummaryGolden(t *testing.T) {
	h := sdktest.InProcess(t, notes{})
	res, err := h.BeforeTree(context.Background(), &sdk.BeforeTreeEvent{SessionID: "s1", TargetID: "a0000000", EntriesToSummarize: fixture(t), UserWantsSummary: true})
	if err != nil {
		t.Fatal(err)
	}
	if res == nil || res.Summary == nil || res.Cancel {
		t.Fatalf("want a summary, got %+v", res)
	}
	golden(t, "branch.golden.md", res.Summary.Summary+"\n")
	var details struct{ ReadFiles, ModifiedFiles []string }
	if err := json.Unmarshal(res.Summary.Details, &details); err != nil {
		t.Fatal(err)
	}
	wantRead := "docs/grammar.md,tokens/estimate_test.go"
	wantMod := "parser/old.go,tokens/estimate.go,tokens/surrogates_test.go"
	if strings.Join(details.ReadFiles, ",") != wantRead || strings.Join(details.ModifiedFiles, ",") != wantMod {
		t.Fatalf("details %s; want read %s, modified %s", res.Summary.Details, wantRead, wantMod)
	}
}

func msgEntry(msg string) json.RawMessage {
	return json.RawMessage(`{"type":"message","id":"a1","parentId":null,"timestamp":"2026-11-30T08:00:00Z","message":` + msg + `}`)
}

func TestBeforeTree(t *testing.T) {
	tests := []struct {
		name      string
		wants     bool
		entries   []json.RawMessage
		contains  []string
		noSummary bool
	}{
		{name: "no summary wanted", wants: false, entries: []json.RawMessage{msgEntry(`{"role":"user","content":"hi"}`)}, noSummary: true},
		{name: "nothing to summarize", wants: true, noSummary: true},
		{name: "only labels and garbage", wants: true, entries: []json.RawMessage{json.RawMessage(`{"type":"label","targetId":"x","label":"y"}`), json.RawMessage(`not json`)}, noSummary: true},
		{
			name: "a question left open", wants: true,
			entries:  []json.RawMessage{msgEntry(`{"role":"user","content":[{"type":"text","text":"Which database?"}]}`)},
			contains: []string{"**First request:** Which database?", "**Where it stopped:** the user had just written: “Which database?”"},
		},
		{
			name: "aborted answer with an error", wants: true,
			entries:  []json.RawMessage{msgEntry(`{"role":"assistant","content":[],"stopReason":"error","errorMessage":"overloaded\nretry later"}`)},
			contains: []string{"- model request error: overloaded retry later", "**Where it stopped:** the assistant had just answered: “”"},
		},
		{
			name: "long text is clipped", wants: true,
			entries:  []json.RawMessage{msgEntry(`{"role":"assistant","content":[{"type":"text","text":"` + strings.Repeat("word ", 100) + `"}],"stopReason":"stop"}`)},
			contains: []string{"word…"},
		},
		{
			name: "commands deduplicated, last kept", wants: true,
			entries: []json.RawMessage{
				msgEntry(`{"role":"bashExecution","command":"make","output":"","exitCode":0}`),
				msgEntry(`{"role":"bashExecution","command":"ls","output":"","exitCode":0}`),
				msgEntry(`{"role":"bashExecution","command":"make","output":"","exitCode":0}`),
				msgEntry(`{"role":"bashExecution","command":"sleep 9","output":"","exitCode":130,"cancelled":true}`),
			},
			contains: []string{"**Commands run:**\n- `ls`\n- `make`\n- `sleep 9`\n", "**Where it stopped:** the user had just run `sleep 9`"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := sdktest.InProcess(t, notes{})
			res, err := h.BeforeTree(context.Background(), &sdk.BeforeTreeEvent{EntriesToSummarize: tc.entries, UserWantsSummary: tc.wants})
			if err != nil {
				t.Fatal(err)
			}
			if tc.noSummary {
				if res != nil {
					t.Fatalf("want no opinion, got %+v", res)
				}
				return
			}
			if res == nil || res.Summary == nil {
				t.Fatalf("want a summary, got %+v", res)
			}
			for _, want := range tc.contains {
				if !strings.Contains(res.Summary.Summary, want) {
					t.Errorf("summary lacks %q:\n%s", want, res.Summary.Summary)
				}
			}
			if strings.Contains(res.Summary.Summary, "Errors hit") && strings.Contains(tc.name, "deduplicated") {
				t.Errorf("a cancelled command is not an error:\n%s", res.Summary.Summary)
			}
		})
	}
}

// TestSubprocess sends the fixture to the built plugin and checks that the
// Dispatcher accepts its summary and that it matches the in-process one.
func TestSubprocess(t *testing.T) {
	h := sdktest.Subprocess(t, binary)
	if !h.Plugin.Implements(sdk.EventBeforeTree) || h.Plugin.Implements(sdk.EventTree) {
		t.Fatal("branch-notes must handle exactly session_before_tree")
	}
	ev := &sdk.BeforeTreeEvent{SessionID: "s1", TargetID: "a0000000", EntriesToSummarize: fixture(t), UserWantsSummary: true}
	out, err := h.Dispatcher.BeforeTree(context.Background(), ev, hooks.SummaryLimits{})
	if err != nil {
		t.Fatal(err)
	}
	if out.Summary == nil || out.Plugin != "plugin-under-test" {
		t.Fatalf("outcome %+v: want the plugin's summary", out)
	}
	want, err := os.ReadFile(filepath.Join("testdata", "branch.golden.md"))
	if err != nil {
		t.Fatal(err)
	}
	if out.Summary.Summary+"\n" != string(want) {
		t.Fatalf("subprocess summary differs from the golden one:\n%s", out.Summary.Summary)
	}
	ev.UserWantsSummary = false
	out, err = h.Dispatcher.BeforeTree(context.Background(), ev, hooks.SummaryLimits{})
	if err != nil || out.Summary != nil || out.Cancelled {
		t.Fatalf("no summary wanted: outcome %+v, %v", out, err)
	}
}
