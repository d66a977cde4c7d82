package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/core/summary"
	"github.com/pith-dev/pith/core/tokens"
)

func gjsonParse(raw []byte) gjson.Result { return gjson.ParseBytes(raw) }

// Message builders: the JSON of docs/behaviour.md §1's agent messages, as a session file
// holds them.

func q(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func rawMsg(role, raw string) session.Message {
	return session.Message{Role: role, Raw: json.RawMessage(raw)}
}

func userMsg(text string) session.Message {
	return rawMsg(session.RoleUser, `{"role":"user","content":[{"type":"text","text":`+q(text)+`}],"timestamp":1}`)
}

type call struct{ id, name, args string }

func asstMsg(text string, calls ...call) session.Message {
	var blocks []string
	if text != "" {
		blocks = append(blocks, `{"type":"text","text":`+q(text)+`}`)
	}
	for _, c := range calls {
		blocks = append(blocks, `{"type":"toolCall","id":`+q(c.id)+`,"name":`+q(c.name)+`,"arguments":`+c.args+`}`)
	}
	stop := "stop"
	if len(calls) > 0 {
		stop = "toolUse"
	}
	return rawMsg(session.RoleAssistant, `{"role":"assistant","content":[`+strings.Join(blocks, ",")+
		`],"provider":"anthropic","model":"m","usage":{"input":10,"output":5,"cacheRead":0,"cacheWrite":0,"totalTokens":15},"stopReason":"`+stop+`"}`)
}

func asstError(msg string) session.Message {
	return rawMsg(session.RoleAssistant, `{"role":"assistant","content":[],"stopReason":"error","errorMessage":`+q(msg)+`}`)
}

func thinkingMsg(thinking, text string) session.Message {
	return rawMsg(session.RoleAssistant, `{"role":"assistant","content":[{"type":"thinking","thinking":`+q(thinking)+
		`},{"type":"text","text":`+q(text)+`}],"stopReason":"stop"}`)
}

func resultMsg(id, name, text string, isError bool) session.Message {
	return rawMsg(session.RoleToolResult, fmt.Sprintf(`{"role":"toolResult","toolCallId":%s,"toolName":%s,"content":[{"type":"text","text":%s}],"isError":%t}`,
		q(id), q(name), q(text), isError))
}

func bashMsg(cmd, out string, exit int) session.Message {
	return rawMsg(session.RoleBashExecution, fmt.Sprintf(`{"role":"bashExecution","command":%s,"output":%s,"exitCode":%d,"cancelled":false,"truncated":false}`,
		q(cmd), q(out), exit))
}

func customMsg(typ, text string) session.Message {
	return rawMsg(session.RoleCustom, `{"role":"custom","customType":`+q(typ)+`,"content":`+q(text)+`,"display":true}`)
}

func pathArgs(p string) string { return `{"path":` + q(p) + `}` }

func editArgs(p string) string {
	return `{"path":` + q(p) + `,"oldText":"a","newText":"b"}`
}

func cmdArgs(c string) string { return `{"command":` + q(c) + `,"timeout":60}` }

var historyHeadings = []string{
	"## Goal", "## Constraints & Preferences", "## Progress", "### Done", "### In Progress",
	"### Blocked", "## Key Decisions", "## Next Steps", "## Critical Context",
}

// checkHistoryShape asserts the sections of docs/behaviour.md §7, each once and in order.
func checkHistoryShape(t *testing.T, text string) {
	t.Helper()
	checkHeadings(t, text, historyHeadings)
}

func checkHeadings(t *testing.T, text string, want []string) {
	t.Helper()
	var got []string
	inFence := false
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "```") {
			inFence = !inFence
		}
		if !inFence && strings.HasPrefix(l, "#") {
			got = append(got, l)
		}
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("headings = %q\nwant %q\n%s", got, want, text)
	}
}

// section returns the lines under a heading, up to the next heading.
func section(text, heading string) string {
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		if l != heading {
			continue
		}
		var body []string
		for _, b := range lines[i+1:] {
			if strings.HasPrefix(b, "#") {
				break
			}
			body = append(body, b)
		}
		return strings.Join(body, "\n")
	}
	return ""
}

const (
	basicRequest  = "Add a --json flag to the `pith stats` command."
	basicRule     = "Please use encoding/json, never a third-party library."
	basicRule2    = "Output must stay backwards compatible."
	basicDecision = "I decided to use a `Stats` struct instead of a map, so the field order stays stable."
	editError     = "Could not find the exact text in cmd/pith/stats_test.go. The old text must match exactly including all whitespace and newlines."
	basicFinal    = "Fixed the encoder and updated the flag help.\n\nNext steps:\n1. Update the README\n2. Run the full suite\n\nShould I also add a `--pretty` flag?"
)

// basicTranscript is one turn: read, a decision, an edit, a failing test
// run, a failed edit, and a final answer ending with a question.
func basicTranscript() []session.Message {
	return []session.Message{
		userMsg(basicRequest + " " + basicRule + " " + basicRule2),
		asstMsg("", call{"c1", "read", pathArgs("cmd/pith/stats.go")}, call{"c2", "read", pathArgs("go.mod")}),
		resultMsg("c1", "read", "package main\n", false),
		resultMsg("c2", "read", "module x\n", false),
		asstMsg(basicDecision, call{"c3", "edit", editArgs("cmd/pith/stats.go")}),
		resultMsg("c3", "edit", "Successfully replaced text in cmd/pith/stats.go.", false),
		asstMsg("", call{"c4", "bash", cmdArgs("cd /repo && go test ./cmd/...")}),
		resultMsg("c4", "bash", "--- FAIL: TestStats (0.00s)\n    stats_test.go:42: got 3 want 4\nFAIL\n\nCommand exited with code 1", true),
		asstMsg("", call{"c5", "edit", editArgs("cmd/pith/stats_test.go")}),
		resultMsg("c5", "edit", editError, true),
		asstMsg(basicFinal),
	}
}

func summarizeOK(t *testing.T, req summary.Request) string {
	t.Helper()
	res, err := New(Options{}).Summarize(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if res.FinishReason != summary.FinishStop {
		t.Fatalf("FinishReason = %s\n%s", res.FinishReason, res.Text)
	}
	if res.Model != Model {
		t.Errorf("Model = %q", res.Model)
	}
	if req.MaxTokens > 0 {
		if got := (tokens.Units(res.Text) + 3) / 4; got > req.MaxTokens {
			t.Errorf("summary is %d tokens, over the cap %d", got, req.MaxTokens)
		}
	}
	return res.Text
}

func TestBuiltinHistorySections(t *testing.T) {
	tests := []struct {
		name   string
		tr     summary.Transcript
		want   map[string][]string // heading → substrings of its section
		absent map[string][]string
	}{
		{
			name: "one full turn",
			tr:   summary.Transcript{Messages: basicTranscript()},
			want: map[string][]string{
				"## Goal":                      {"- " + basicRequest},
				"## Constraints & Preferences": {"- " + basicRule, "- " + basicRule2},
				"### Done": {
					"- [x] Fixed the encoder and updated the flag help.",
					"- [x] Edited `cmd/pith/stats.go` (1 edit)",
					"- [x] Ran `go test ./cmd/...` (exit 1)",
				},
				"### In Progress": {"Waiting for the user's answer"},
				"### Blocked": {
					"`edit` `cmd/pith/stats_test.go`: " + editError,
					"`bash` `go test ./cmd/...`: --- FAIL: TestStats (0.00s) … stats_test.go:42: got 3 want 4",
				},
				"## Key Decisions": {"- " + basicDecision},
				"## Next Steps":    {"Update the README", "Run the full suite", "open question"},
				"## Critical Context": {
					"Unanswered question to the user (verbatim):\n```text\n" + basicFinal + "\n```",
					"- Modified: `cmd/pith/stats.go`",
					"- Read: `go.mod`",
					"`Stats`", "`--pretty`",
				},
			},
			absent: map[string][]string{
				"## Critical Context": {"Read: `cmd/pith/stats.go`"},
				"### Done":            {"stats_test.go"}, // the edit failed
			},
		},
		{
			name: "last request unanswered",
			tr: summary.Transcript{Messages: []session.Message{
				userMsg("Rename `Foo` to `Bar` across the repo."),
				asstMsg("Done: renamed `Foo` to `Bar` in 3 files."),
				userMsg("Now also update the changelog for the rename."),
			}},
			want: map[string][]string{
				"## Goal":         {"- Rename `Foo` to `Bar` across the repo.", "- Now also update the changelog for the rename."},
				"### Done":        {"- [x] Done: renamed `Foo` to `Bar` in 3 files."},
				"### In Progress": {"- [ ] Now also update the changelog for the rename."},
				"## Next Steps":   {"1. Respond to the user's latest message: Now also update the changelog for the rename."},
			},
			absent: map[string][]string{"## Critical Context": {"Unanswered question"}},
		},
		{
			name: "error fixed later is not blocking",
			tr: summary.Transcript{Messages: []session.Message{
				userMsg("Make the build pass on CI please."),
				asstMsg("", call{"a", "bash", cmdArgs("make build")}),
				resultMsg("a", "bash", "main.go:3:2: undefined: frob\nCommand exited with code 2", true),
				asstMsg("", call{"b", "edit", editArgs("main.go")}),
				resultMsg("b", "edit", "ok", false),
				asstMsg("", call{"c", "bash", cmdArgs("make build")}),
				resultMsg("c", "bash", "built", false),
				asstMsg("The build passes now."),
			}},
			want: map[string][]string{
				"### Blocked":         {"(none)"},
				"### Done":            {"- [x] Ran `make build` ×2 (last: ok)", "- [x] The build passes now."},
				"## Critical Context": {"Earlier error (resolved later) from `bash` `make build`: main.go:3:2: undefined: frob"},
			},
		},
		{
			name: "acknowledgement after the work",
			tr: summary.Transcript{Messages: []session.Message{
				userMsg("Bump the Go version in go.mod to 1.26."),
				asstMsg("Updated go.mod to go 1.26."),
				userMsg("ok"),
			}},
			want: map[string][]string{
				"## Goal":         {"- Bump the Go version in go.mod to 1.26."},
				"### In Progress": {"- [ ] ok"},
				"## Next Steps":   {"1. Respond to the user's latest message: ok"},
			},
			absent: map[string][]string{"## Goal": {"- ok"}, "### In Progress": {"Bump"}},
		},
		{
			name: "model error ends the transcript",
			tr: summary.Transcript{Messages: []session.Message{
				userMsg("Summarize the design doc for me."),
				asstError("429 rate_limit_error: too many requests"),
			}},
			want: map[string][]string{
				"### Blocked":     {"- model response: 429 rate_limit_error: too many requests"},
				"### In Progress": {"- [ ] Summarize the design doc for me."},
			},
		},
		{
			name: "commands the user ran",
			tr: summary.Transcript{Messages: []session.Message{
				bashMsg("make lint", "lint.go:7: exported func Foo should have comment\n", 2),
				userMsg("Fix what the linter found, and don't touch the generated files."),
				asstMsg("", call{"a", "bash", cmdArgs("grep -rn Foo .")}, call{"b", "bash", cmdArgs("ls")}),
				resultMsg("a", "bash", "x", false),
				resultMsg("b", "bash", "y", false),
			}},
			want: map[string][]string{
				"### Done":                     {"- [x] User ran `make lint` (exit 2)", "`grep`", "`ls`", "(2 commands)"},
				"## Constraints & Preferences": {"don't touch the generated files"},
				"## Critical Context":          {"user command `make lint`: lint.go:7: exported func Foo should have comment"},
			},
		},
		{
			name: "plugin context lines, focus, file lists",
			tr: summary.Transcript{
				Messages:      []session.Message{userMsg("Tidy up the config loader.")},
				ContextLines:  []string{"Ticket PITH-42: the public API is frozen  (keep exactly)", "owner: @ana"},
				Instructions:  "the koanf migration",
				ReadFiles:     []string{"config/load.go"},
				ModifiedFiles: []string{"config/koanf.go"},
			},
			want: map[string][]string{
				"## Goal":                      {"- Additional focus: the koanf migration", "- Tidy up the config loader."},
				"## Constraints & Preferences": {"- Ticket PITH-42: the public API is frozen  (keep exactly)\n- owner: @ana"},
				"### Done":                     {"- [x] Modified `config/koanf.go`"},
				"## Critical Context":          {"- Modified: `config/koanf.go`", "- Read: `config/load.go`"},
			},
		},
		{
			name: "summaries and plugin messages inside the messages",
			tr: summary.Transcript{Messages: []session.Message{
				session.NewCompactionSummary("## Goal\n- Port the parser to Go\n\n## Progress\n### Done\n- [x] Wrote `lexer.go`\n\n<read-files>\nspec.md\n</read-files>", 1000, "2025-01-01T00:00:00Z", "e1"),
				session.NewBranchSummary("The user explored a different branch.\n\n## Goal\n- Try a PEG grammar", "e0", "2025-01-01T00:00:00Z", "e2"),
				customMsg("reminder", "Remember: release on Friday."),
				userMsg("Continue with the parser tests."),
			}},
			want: map[string][]string{
				"## Goal":             {"- Port the parser to Go", "- Continue with the parser tests."},
				"### Done":            {"- [x] Wrote `lexer.go`", "Came back from an abandoned branch: Try a PEG grammar", "Context note (reminder): Remember: release on Friday."},
				"## Critical Context": {"- Read: `spec.md`"},
			},
		},
		{
			name: "empty transcript",
			tr:   summary.Transcript{},
			want: map[string][]string{"## Goal": {"(none)"}, "### Done": {"(none)"}, "## Critical Context": {"(none)"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := tt.tr
			text := summarizeOK(t, summary.Request{Purpose: summary.PurposeHistory, MaxTokens: 4000, Source: &tr})
			checkHistoryShape(t, text)
			for h, subs := range tt.want {
				body := section(text, h)
				for _, s := range subs {
					if !strings.Contains(body, s) {
						t.Errorf("section %s lacks %q; it is:\n%s", h, s, body)
					}
				}
			}
			for h, subs := range tt.absent {
				body := section(text, h)
				for _, s := range subs {
					if strings.Contains(body, s) {
						t.Errorf("section %s holds %q; it is:\n%s", h, s, body)
					}
				}
			}
			if t.Failed() {
				t.Logf("summary:\n%s", text)
			}
		})
	}
}

func TestBuiltinUpdateMerge(t *testing.T) {
	prev := strings.Join([]string{
		"## Goal", "- Build the session parser", "",
		"## Constraints & Preferences", "- Never drop unknown fields", "",
		"## Progress", "### Done", "- [x] Wrote `core/session/parse.go`", "",
		"### In Progress", "- [ ] Migration tests", "",
		"### Blocked", "(none)", "",
		"## Key Decisions", "- **Use gjson**: no full decode on load", "",
		"## Next Steps", "1. Write the v1 migration", "",
		"## Critical Context", "- Fixtures live in `shared/testdata/pi`", "",
		"<read-files>\ncore/session/entry.go\n</read-files>",
		"",
		"<modified-files>\ncore/session/parse.go\n</modified-files>",
	}, "\n")
	tr := &summary.Transcript{
		PreviousSummary: prev,
		Messages: []session.Message{
			userMsg("Now write the v1 migration, and never drop unknown fields."),
			asstMsg("", call{"a", "write", `{"path":"core/session/migrate.go","content":"package session"}`}),
			resultMsg("a", "write", "Successfully wrote 15 bytes", false),
			asstMsg("I chose to migrate in memory instead of rewriting the file. Migration done."),
		},
	}
	text := summarizeOK(t, summary.Request{Purpose: summary.PurposeHistory, MaxTokens: 4000, Source: tr})
	checkHistoryShape(t, text)
	want := map[string][]string{
		"## Goal":                      {"- Build the session parser\n- Now write the v1 migration, and never drop unknown fields."},
		"## Constraints & Preferences": {"- Never drop unknown fields", "- Now write the v1 migration, and never drop unknown fields."},
		"### Done":                     {"- [x] Wrote `core/session/parse.go`", "- [x] Wrote `core/session/migrate.go`", "Migration done."},
		"### In Progress":              {"- [ ] Migration tests"},
		"## Key Decisions":             {"- **Use gjson**: no full decode on load", "- I chose to migrate in memory instead of rewriting the file."},
		"## Next Steps":                {"Write the v1 migration"},
		"## Critical Context":          {"- Fixtures live in `shared/testdata/pi`", "- Read: `core/session/entry.go`", "- Modified: `core/session/parse.go`", "- Modified: `core/session/migrate.go`"},
	}
	for h, subs := range want {
		body := section(text, h)
		for _, s := range subs {
			if !strings.Contains(body, s) {
				t.Errorf("section %s lacks %q; it is:\n%s", h, s, body)
			}
		}
	}
	// Merging again with the result as the previous summary adds nothing:
	// every line is already there.
	tr2 := &summary.Transcript{PreviousSummary: text}
	again := summarizeOK(t, summary.Request{Purpose: summary.PurposeHistory, MaxTokens: 4000, Source: tr2})
	for _, h := range []string{"## Goal", "## Constraints & Preferences", "### Done", "## Key Decisions", "## Critical Context"} {
		if got, was := section(again, h), section(text, h); got != was {
			t.Errorf("re-merge changed %s:\n%s\nwas:\n%s", h, got, was)
		}
	}
	if strings.Contains(text, "<read-files>") {
		t.Error("file blocks of the previous summary were copied into the text")
	}
	if t.Failed() {
		t.Logf("summary:\n%s", text)
	}
}

// hugeTranscript is n turns of everything: long requests, reads, edits,
// failing commands, decisions.
func hugeTranscript(n int) []session.Message {
	var msgs []session.Message
	for i := 0; i < n; i++ {
		id := func(s string) string { return fmt.Sprintf("%s%d", s, i) }
		p := fmt.Sprintf("pkg/mod%03d/file%03d.go", i%97, i)
		msgs = append(msgs,
			userMsg(fmt.Sprintf("Request %d: please refactor `Thing%d` in %s so that it never allocates on the hot path. %s", i, i, p, strings.Repeat("More detail. ", 20))),
			thinkingMsg("thinking "+strings.Repeat("x", 200), fmt.Sprintf("I decided to use a pool instead of `new(Thing%d)`.", i)),
			asstMsg("", call{id("r"), "read", pathArgs(p)}, call{id("e"), "edit", editArgs(p)}, call{id("b"), "bash", cmdArgs(fmt.Sprintf("go test ./pkg/mod%03d/", i%97))}),
			resultMsg(id("r"), "read", strings.Repeat("code\n", 100), false),
			resultMsg(id("e"), "edit", "ok", false),
			resultMsg(id("b"), "bash", fmt.Sprintf("--- FAIL: TestThing%d\nCommand exited with code 1", i), i%3 == 0),
			asstMsg(fmt.Sprintf("Refactored `Thing%d`; the tests pass. Next, I'll look at mod%03d.", i, (i+1)%97)),
		)
	}
	return msgs
}

func TestBuiltinCap(t *testing.T) {
	msgs := append(hugeTranscript(400), asstMsg("Which package should I do next?"))
	tr := &summary.Transcript{
		Messages:     msgs,
		ContextLines: []string{"Keep the v2 API (from plugin)."},
	}
	for _, max := range []int{200, 500, 2000} {
		t.Run(fmt.Sprint(max), func(t *testing.T) {
			text := summarizeOK(t, summary.Request{Purpose: summary.PurposeHistory, MaxTokens: max, Source: tr})
			checkHistoryShape(t, text)
			for _, must := range []string{"Keep the v2 API (from plugin).", "Which package should I do next?"} {
				if !strings.Contains(text, must) {
					t.Errorf("cap %d dropped %q:\n%s", max, must, text)
				}
			}
			for _, l := range strings.Split(text, "\n") {
				if strings.HasPrefix(l, "- ") && strings.TrimSpace(l) == "-" {
					t.Errorf("empty list line in:\n%s", text)
				}
			}
		})
	}
	t.Run("skeleton over the cap", func(t *testing.T) {
		res, err := New(Options{}).Summarize(context.Background(), summary.Request{MaxTokens: 10, Source: tr})
		if err != nil {
			t.Fatal(err)
		}
		if res.FinishReason != summary.FinishLength {
			t.Errorf("FinishReason = %s, want length", res.FinishReason)
		}
		if u := tokens.Units(res.Text); u > 40 {
			t.Errorf("text is %d units, over 40: %q", u, res.Text)
		}
	})
}

func TestBuiltinDeterministic(t *testing.T) {
	tr := &summary.Transcript{Messages: hugeTranscript(50), ContextLines: []string{"a", "b"}, ReadFiles: []string{"z.go", "a.go"}}
	s := New(Options{})
	purposes := []summary.Purpose{summary.PurposeHistory, summary.PurposeTurnPrefix, summary.PurposeShort, summary.PurposeBranch}
	want := map[summary.Purpose]string{}
	for _, p := range purposes {
		want[p] = summarizeOK(t, summary.Request{Purpose: p, MaxTokens: 1500, Source: tr})
	}
	var wg sync.WaitGroup
	got := make([]string, 8*len(purposes))
	for i := range got {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			res, err := s.Summarize(context.Background(), summary.Request{Purpose: purposes[i%len(purposes)], MaxTokens: 1500, Source: tr})
			if err == nil {
				got[i] = res.Text
			}
		}(i)
	}
	wg.Wait()
	for i, g := range got {
		if p := purposes[i%len(purposes)]; g != want[p] {
			t.Fatalf("run %d of %s differs:\n%s\nwant:\n%s", i, p, g, want[p])
		}
	}
}

// countdownCtx reports cancellation after its Err has been asked n times,
// to cancel in the middle of the work without timing.
type countdownCtx struct {
	context.Context
	mu sync.Mutex
	n  int
}

func (c *countdownCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n <= 0 {
		return context.Canceled
	}
	c.n--
	return nil
}

func (c *countdownCtx) Done() <-chan struct{} { return nil }

func TestBuiltinCancellation(t *testing.T) {
	tr := &summary.Transcript{Messages: hugeTranscript(300)}
	s := New(Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Summarize(ctx, summary.Request{Source: tr}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled before: err = %v", err)
	}
	for _, n := range []int{1, 3, 8, 12} {
		_, err := s.Summarize(&countdownCtx{Context: context.Background(), n: n}, summary.Request{MaxTokens: 100, Source: tr})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled after %d checks: err = %v", n, err)
		}
	}
}

const servedPrompt = "<conversation>\n" +
	"[User]: Fix the flaky test in `core/session`. Don't add sleeps.\n\n" +
	"[Assistant thinking]: Look at the store test first.\n\n" +
	"[Assistant]: Let me read it.\n\n" +
	"[Assistant tool calls]: read(path=\"core/session/store_test.go\"); bash(command=\"go test -race ./core/session/\", timeout=60)\n\n" +
	"[Tool result]: package session\n\nfunc TestAppend(t *testing.T) {}\n\n" +
	"[Tool result]: --- FAIL: TestAppend (0.01s)\n    store_test.go:88: lost write\nFAIL\n\nCommand exited with code 1\n\n" +
	"[User]: Ran `make lint`\n```\nok\n```\n\n" +
	"[Assistant]: The race is in `Store.Append`: two writers share the buffer.\nShould I add a mutex or a channel?\n" +
	"</conversation>\n\n" +
	"<previous-summary>\n## Goal\n- Keep session files consistent under concurrency\n</previous-summary>\n\n" +
	"<additional-context>\n- plugin: ship before Friday\n</additional-context>\n\n" +
	"The messages above are NEW conversation messages to incorporate into the existing summary.\n\n" +
	"Additional focus: the race condition"

func TestBuiltinPromptFallback(t *testing.T) {
	text := summarizeOK(t, summary.Request{Purpose: summary.PurposeCompletion, Prompt: servedPrompt, MaxTokens: 2000})
	checkHistoryShape(t, text)
	want := map[string][]string{
		"## Goal": {"- Keep session files consistent under concurrency", "- Fix the flaky test in `core/session`.",
			"- Additional focus: the race condition"},
		"## Constraints & Preferences": {"- plugin: ship before Friday", "- Don't add sleeps."},
		"### Done":                     {"- [x] Ran `go test -race ./core/session/` (exit 1)", "- [x] User ran `make lint` (exit 0)"},
		"### Blocked":                  {"`bash` `go test -race ./core/session/`: --- FAIL: TestAppend (0.01s) … store_test.go:88: lost write"},
		"## Critical Context": {"- Read: `core/session/store_test.go`",
			"The race is in `Store.Append`: two writers share the buffer.\nShould I add a mutex or a channel?", "`Store.Append`"},
	}
	for h, subs := range want {
		body := section(text, h)
		for _, s := range subs {
			if !strings.Contains(body, s) {
				t.Errorf("section %s lacks %q; it is:\n%s", h, s, body)
			}
		}
	}
	if t.Failed() {
		t.Logf("summary:\n%s", text)
	}
}

func TestBuiltinPromptDigest(t *testing.T) {
	tests := []struct {
		name, prompt, want string
		max                int
	}{
		{"paragraphs", "Write a haiku about Go. Make it rhyme.\n\nIt should mention goroutines. Keep it short.", "- Write a haiku about Go.\n- It should mention goroutines.", 0},
		{"cap drops later points", "First point here. More.\n\nSecond point. More.", "- First point here.", 6},
		{"empty", "  \n", "(empty prompt)", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := summarizeOK(t, summary.Request{Purpose: summary.PurposeCompletion, Prompt: tt.prompt, MaxTokens: tt.max})
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestBuiltinPurposes(t *testing.T) {
	tr := &summary.Transcript{Messages: basicTranscript()}
	t.Run("turn prefix", func(t *testing.T) {
		text := summarizeOK(t, summary.Request{Purpose: summary.PurposeTurnPrefix, MaxTokens: 2000, Source: tr})
		checkHeadings(t, text, []string{"## Original Request", "## Early Progress", "## Context for Suffix"})
		for h, s := range map[string]string{
			"## Original Request":   basicRequest,
			"## Early Progress":     "- [x] Edited `cmd/pith/stats.go` (1 edit)",
			"## Context for Suffix": "- Decision: " + basicDecision,
		} {
			if !strings.Contains(section(text, h), s) {
				t.Errorf("%s lacks %q:\n%s", h, s, text)
			}
		}
		if !strings.Contains(section(text, "## Early Progress"), "- Blocked: `edit` `cmd/pith/stats_test.go`: "+editError) {
			t.Errorf("Early Progress lacks the error:\n%s", text)
		}
	})
	t.Run("short", func(t *testing.T) {
		text := summarizeOK(t, summary.Request{Purpose: summary.PurposeShort, MaxTokens: 512, Source: tr})
		if strings.Contains(text, "\n") {
			t.Errorf("short summary has a line break: %q", text)
		}
		want := "Goal: " + basicRequest +
			" The assistant modified 1 file (`stats.go`), ran 1 command and read 1 file." +
			" It ended waiting for the user's answer to: Should I also add a `--pretty` flag?"
		if text != want {
			t.Errorf("short summary = %q\nwant %q", text, want)
		}
		tiny := summarizeOK(t, summary.Request{Purpose: summary.PurposeShort, MaxTokens: 20, Source: tr})
		if tiny == "" {
			t.Error("short summary under a small cap is empty")
		}
	})
	t.Run("branch", func(t *testing.T) {
		msgs := basicTranscript()[:8] // stops after the failing test run
		text := summarizeOK(t, summary.Request{Purpose: summary.PurposeBranch, MaxTokens: 2048, Source: &summary.Transcript{Messages: msgs}})
		checkHistoryShape(t, text)
		if !strings.Contains(section(text, "### Done"), "Edited `cmd/pith/stats.go`") {
			t.Errorf("branch summary lacks the files touched:\n%s", text)
		}
		if !strings.Contains(section(text, "### Blocked"), "--- FAIL: TestStats") {
			t.Errorf("branch summary lacks where it stopped:\n%s", text)
		}
	})
	t.Run("value source", func(t *testing.T) {
		a := summarizeOK(t, summary.Request{Source: *tr})
		b := summarizeOK(t, summary.Request{Source: tr})
		if a != b {
			t.Error("Transcript and *Transcript sources differ")
		}
	})
}

func TestParseCalls(t *testing.T) {
	tests := []struct {
		in   string
		want string // name(key=raw|key=raw);…
	}{
		{`read(path="a.go")`, `read(path="a.go")`},
		{`bash(command="ls; echo \"x)\"", timeout=60); edit(path="b.go", edits=[{"old":"a, b","new":"c"}])`,
			`bash(command="ls; echo \"x)\""|timeout=60);edit(path="b.go"|edits=[{"old":"a, b","new":"c"}])`},
		{`noargs()`, `noargs()`},
		{`broken(path=`, `broken()`},
		{`nothing here`, ``},
	}
	for _, tt := range tests {
		var parts []string
		for _, c := range parseCalls(tt.in) {
			var args []string
			for _, a := range c.args {
				args = append(args, a.key+"="+a.raw)
			}
			parts = append(parts, c.name+"("+strings.Join(args, "|")+")")
		}
		if got := strings.Join(parts, ";"); got != tt.want {
			t.Errorf("parseCalls(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

func TestParsePrevSummaryShapes(t *testing.T) {
	in := "The user explored a different branch before returning here.\n\n" +
		"## Goal\n1. First goal\n2. Second goal\n   continued\n\n" +
		"## Progress\n- [x] Loose progress line\n### In Progress\n- [ ] half done\n\n" +
		"---\n\n**Turn Context (split turn):**\n\n## Original Request\nDo the thing\n\n## Early Progress\n- step one\n\n## Context for Suffix\n- `x.go` matters\n" +
		"```go\nfunc f() {}\n```\n" +
		"## Something Else\n- odd\n(none)\n"
	got := parsePrevSummary(in)
	want := []prevItem{
		{bCritical, "The user explored a different branch before returning here."},
		{bGoal, "First goal"},
		{bGoal, "Second goal\n   continued"},
		{bDone, "Loose progress line"},
		{bInProgress, "half done"},
		{bGoal, "Do the thing"},
		{bDone, "step one"},
		{bCritical, "`x.go` matters\n```go\nfunc f() {}\n```"},
		{bCritical, "odd"},
	}
	if fmt.Sprint(got.items) != fmt.Sprint(want) {
		t.Errorf("items =\n%v\nwant\n%v", got.items, want)
	}
}

func BenchmarkBuiltinSummarize(b *testing.B) {
	msgs := hugeTranscript(10000 / 7)
	for len(msgs) < 10000 {
		msgs = append(msgs, userMsg("one more request to reach ten thousand"))
	}
	tr := &summary.Transcript{Messages: msgs[:10000]}
	s := New(Options{})
	req := summary.Request{Purpose: summary.PurposeHistory, MaxTokens: 13107, Source: tr}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Summarize(context.Background(), req); err != nil {
			b.Fatal(err)
		}
	}
}

func TestBuiltinTrimOrder(t *testing.T) {
	tr := &summary.Transcript{Messages: basicTranscript()}
	full := summarizeOK(t, summary.Request{Source: tr})
	// A cap a little under the full size drops the least valuable lines
	// first: identifiers, the read-file count, the filler.
	cap := (tokens.Units(full)+3)/4 - 40
	text := summarizeOK(t, summary.Request{MaxTokens: cap, Source: tr})
	checkHistoryShape(t, text)
	for _, gone := range []string{"Identifiers:", "Read 1 file", "Resolve the blocking error above"} {
		if !strings.Contains(full, gone) {
			t.Fatalf("the full summary lacks %q", gone)
		}
		if strings.Contains(text, gone) {
			t.Errorf("cap %d kept the low-value line %q:\n%s", cap, gone, text)
		}
	}
	for _, kept := range []string{basicRequest, editError, "Edited `cmd/pith/stats.go`", basicDecision, "Update the README", "Should I also add a `--pretty` flag?"} {
		if !strings.Contains(text, kept) {
			t.Errorf("cap %d dropped %q:\n%s", cap, kept, text)
		}
	}
	// Every line of the trimmed text is a whole line of the full one.
	fullLines := map[string]bool{}
	for _, l := range strings.Split(full, "\n") {
		fullLines[l] = true
	}
	for _, l := range strings.Split(text, "\n") {
		if !fullLines[l] && l != "(none)" && !strings.HasPrefix(l, "1. ") && !strings.HasPrefix(l, "2. ") && !strings.HasPrefix(l, "3. ") {
			t.Errorf("trimmed text has a line the full one lacks: %q", l)
		}
	}
}

func TestBuiltinSkipsMalformedMessages(t *testing.T) {
	msgs := []session.Message{
		rawMsg("user", `{"role":`),
		rawMsg("weird", `{"role":"weird","content":"x"}`),
		userMsg("Write the migration guide for v2 users."),
	}
	text := summarizeOK(t, summary.Request{Source: &summary.Transcript{Messages: msgs}})
	if !strings.Contains(section(text, "## Goal"), "- Write the migration guide for v2 users.") {
		t.Errorf("summary:\n%s", text)
	}
}

func TestClip(t *testing.T) {
	tests := []struct {
		in   string
		max  int
		want string
	}{
		{"short", 10, "short"},
		{"one two three four five", 12, "one two thr…"},
		{"alpha beta gamma delta epsilon", 20, "alpha beta gamma…"},
		{"see `a/very/long/path.go` here", 20, "see…"},
		{"😀😀😀😀", 5, "😀😀…"},
		{"abcdef", 0, "abcdef"},
	}
	for _, tt := range tests {
		got := clip(tt.in, tt.max)
		if got != tt.want {
			t.Errorf("clip(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
		}
		if tt.max > 0 && tokens.Units(got) > tt.max {
			t.Errorf("clip(%q, %d) is %d units", tt.in, tt.max, tokens.Units(got))
		}
	}
}

func TestSentences(t *testing.T) {
	in := "# Heading\nFixed `main.go` in v1.2. Tests pass! Why?\n\n- item one, e.g. this\n```go\nx := 1. Not prose.\n```\n| a | b |\n> quoted line."
	want := []string{"Fixed `main.go` in v1.2.", "Tests pass!", "Why?", "item one, e.g. this", "quoted line."}
	if got := sentences(in); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("sentences = %q\nwant %q", got, want)
	}
}

// serializeForTest renders messages the way docs/behaviour.md §6 serializes them for a
// summarizer prompt (without truncation), so the prompt path can be
// checked against the transcript path.
func serializeForTest(t *testing.T, msgs []session.Message) string {
	t.Helper()
	var blocks []string
	for _, m := range msgs {
		am, err := m.Decode()
		if err != nil {
			t.Fatal(err)
		}
		switch am.Role {
		case session.RoleUser:
			blocks = append(blocks, "[User]: "+joinBlocks(am))
		case session.RoleAssistant:
			var texts, calls []string
			for _, b := range am.ContentBlocks() {
				switch b.Type {
				case "text":
					texts = append(texts, b.Text)
				case "toolCall":
					var args []string
					for _, a := range objectArgs(gjsonParse(b.Arguments)) {
						args = append(args, a.key+"="+a.raw)
					}
					calls = append(calls, b.Name+"("+strings.Join(args, ", ")+")")
				}
			}
			if len(texts) > 0 {
				blocks = append(blocks, "[Assistant]: "+strings.Join(texts, "\n"))
			}
			if len(calls) > 0 {
				blocks = append(blocks, "[Assistant tool calls]: "+strings.Join(calls, "; "))
			}
		case session.RoleToolResult:
			blocks = append(blocks, "[Tool result]: "+joinBlocks(am))
		}
	}
	return "<conversation>\n" + strings.Join(blocks, "\n\n") + "\n</conversation>\n\nSummarize the conversation above."
}

func joinBlocks(am *session.AgentMessage) string {
	var s []string
	for _, b := range am.ContentBlocks() {
		if b.Type == "text" {
			s = append(s, b.Text)
		}
	}
	return strings.Join(s, "")
}

func TestBuiltinPromptMatchesTranscript(t *testing.T) {
	msgs := basicTranscript()
	fromTranscript := summarizeOK(t, summary.Request{MaxTokens: 4000, Source: &summary.Transcript{Messages: msgs}})
	fromPrompt := summarizeOK(t, summary.Request{MaxTokens: 4000, Prompt: serializeForTest(t, msgs)})
	if fromPrompt != fromTranscript {
		t.Errorf("prompt path:\n%s\n\ntranscript path:\n%s", fromPrompt, fromTranscript)
	}
}

func TestUserBlockEvent(t *testing.T) {
	tests := []struct {
		in   string
		want string // kind|command|exit|cancelled|text
	}{
		{"Ran `make`\n```\nbuilt\n```", "3|make|0|false|built"},
		{"Ran `make test`\n```\nFAIL x\n```\n\nCommand exited with code 2", "3|make test|2|false|FAIL x"},
		{"Ran `true`\n(no output)", "3|true|0|false|"},
		{"Ran `false`\n(no output)\n\nCommand exited with code 1", "3|false|1|false|"},
		{"Ran `sleep 9`\n```\n```\n\n(command cancelled)", "3|sleep 9|-|true|"},
		{"Earlier work was compacted.\n\n<summary>\n## Goal\n- x\n</summary>", "5||-|false|## Goal\n- x"},
		{"We came back from a branch.\n\n<summary>\nbranch work</summary>", "6||-|false|branch work"},
		{"Ran the tests myself, all fine", "0||-|false|Ran the tests myself, all fine"},
	}
	for _, tt := range tests {
		ev := userBlockEvent(tt.in)
		exit := "-"
		if ev.exit != nil {
			exit = fmt.Sprint(*ev.exit)
		}
		got := fmt.Sprintf("%d|%s|%s|%t|%s", ev.kind, ev.command, exit, ev.cancelled, ev.text)
		if got != tt.want {
			t.Errorf("userBlockEvent(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
