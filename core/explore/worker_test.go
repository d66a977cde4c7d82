package explore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/core/summary"
)

// smallRange is a hand-made range: a task, a search, a large tool output,
// a decision. Entry r0000009 is the retained tail.
func smallRange() (msgs, retained []session.Message) {
	big := strings.Repeat("log line of a long build output\n", 2000) // ~16 000 tokens
	msgs = []session.Message{
		msg("r0000001", `{"role":"user","content":"Fix the flaky parser test in core/parse.go"}`),
		msg("r0000002", `{"role":"assistant","content":[{"type":"text","text":"Looking at the parser."},{"type":"toolCall","id":"t1","name":"read","arguments":{"path":"core/parse.go"}}]}`),
		msg("r0000003", `{"role":"toolResult","toolCallId":"t1","toolName":"read","content":[{"type":"text","text":"package core // PARSE-BODY"}],"isError":false}`),
		msg("r0000004", `{"role":"assistant","content":[{"type":"toolCall","id":"t2","name":"bash","arguments":{"command":"go test ./core"}}]}`),
		msg("r0000005", `{"role":"toolResult","toolCallId":"t2","toolName":"bash","content":[{"type":"text","text":"`+strings.ReplaceAll(big, "\n", `\n`)+`"}],"isError":true}`),
		msg("r0000006", `{"role":"assistant","content":[{"type":"text","text":"Decision: use a deterministic seed in TestParse."}]}`),
	}
	retained = []session.Message{
		msg("r0000009", `{"role":"user","content":"RETAINED-TAIL-SECRET now also update the docs"}`),
	}
	return msgs, retained
}

func TestWorkerExploresAndWritesSummary(t *testing.T) {
	msgs, retained := smallRange()
	ws := newWorkspace(t, map[string]string{"core/parse.go": "package core\n\nfunc Parse() {}\n", "docs/parse.md": "# Parser\n"})
	model, srv := newModel(t,
		turn{text: "searching", calls: []summary.ToolCall{call(ToolSearch, `{"query":"deterministic seed"}`)}},
		turn{calls: []summary.ToolCall{call(ToolReadItems, `{"from":1,"to":4}`), call(ToolReadFile, `{"path":"core/parse.go"}`)}},
		turn{calls: []summary.ToolCall{call(ToolMarkRead, `{"path":"core/parse.go"}`), call(ToolReference, `{"path":"docs/parse.md","note":"parser docs"}`)}},
		turn{calls: []summary.ToolCall{call(ToolSummary, `{"text":"## Goal\nFix the flaky parser test."}`)}},
	)
	var progress []Progress
	w := &Worker{Model: model, Budgets: DefaultBudgets(), Progress: func(p Progress) { progress = append(progress, p) }}
	res, err := w.Run(context.Background(), Input{Messages: msgs, Retained: retained, Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	if res.Summary != "## Goal\nFix the flaky parser test." {
		t.Errorf("summary = %q", res.Summary)
	}
	if res.Stats.Turns != 4 || len(progress) != 4 || progress[1].Tools[1] != ToolReadFile {
		t.Errorf("turns %d, progress %+v", res.Stats.Turns, progress)
	}
	if res.Stats.ToolCalls[ToolSearch] != 1 || res.Stats.ToolCalls[ToolSummary] != 1 {
		t.Errorf("tool calls = %v", res.Stats.ToolCalls)
	}
	if res.AutoRead == nil || !strings.Contains(res.AutoRead.Text, "func Parse() {}") || !strings.Contains(res.AutoRead.Text, "docs/parse.md — parser docs") {
		t.Fatalf("auto-read = %+v", res.AutoRead)
	}
	reqs := srv.requests(t)
	first := fmt.Sprint(reqs[0])
	if strings.Contains(first, "log line of a long build output") || strings.Contains(first, "PARSE-BODY") {
		t.Error("the first request carries a tool output body")
	}
	// Turn 2 saw the search hit; turn 3 the items (compact: no output body)
	// and the file.
	second := fmt.Sprint(reqs[1])
	if !strings.Contains(second, "#6 r0000006 assistant") {
		t.Errorf("search result missing from turn 2: %.600s", second)
	}
	third := fmt.Sprint(reqs[2])
	if !strings.Contains(third, "[output: ~") || strings.Contains(third, "log line of a long") || !strings.Contains(third, "func Parse() {}") {
		t.Errorf("turn 3 request: %.2000s", third)
	}
	if strings.Contains(fmt.Sprint(reqs), "RETAINED-TAIL-SECRET") {
		t.Error("the retained tail reached the worker")
	}
	n, err := DryRun(res.Summary, res.AutoRead, retained, DefaultBudgets())
	if err != nil || n <= 0 {
		t.Errorf("dry run = %d, %v", n, err)
	}
}

func TestWorkerFinishWarningOnce(t *testing.T) {
	msgs, _ := smallRange()
	b := DefaultBudgets()
	b.WorkerContextMax, b.FinishWarningRemaining, b.FinalReserve = 8000, 5000, 1000
	model, srv := newModel(t,
		turn{calls: []summary.ToolCall{call(ToolReadItems, `{"from":1,"to":4}`)}},
		turn{calls: []summary.ToolCall{call(ToolSearch, `{"query":"parser"}`)}},
		turn{calls: []summary.ToolCall{call(ToolSearch, `{"query":"seed"}`)}},
		turn{calls: []summary.ToolCall{call(ToolSummary, `{"text":"## Goal\nDone."}`)}},
	)
	var warnings []string
	w := &Worker{Model: model, Budgets: b, Warn: func(s string) { warnings = append(warnings, s) }}
	// A long first message pushes the conversation under the warning mark.
	res, err := w.Run(context.Background(), Input{Messages: msgs, Instructions: Instructions{Focus: strings.Repeat("focus ", 2500)}})
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "budget low") {
		t.Errorf("warnings for people = %q", warnings)
	}
	last := fmt.Sprint(srv.requests(t)[3])
	if c := strings.Count(last, "Budget warning"); c != 1 {
		t.Errorf("the worker was warned %d times", c)
	}
	if len(res.Stats.Warnings) != 1 {
		t.Errorf("stats warnings = %q", res.Stats.Warnings)
	}
}

func TestWorkerTruncatesToProtectFinalReserve(t *testing.T) {
	msgs, _ := smallRange()
	b := DefaultBudgets()
	b.WorkerContextMax, b.FinishWarningRemaining, b.FinalReserve = 12000, 1000, 3000
	model, srv := newModel(t,
		turn{calls: []summary.ToolCall{call(ToolReadItems, `{"from":5,"to":5,"mode":"full"}`)}},
		turn{calls: []summary.ToolCall{call(ToolSummary, `{"text":"## Goal\nDone."}`)}},
	)
	res, err := (&Worker{Model: model, Budgets: b}).Run(context.Background(), Input{Messages: msgs})
	if err != nil {
		t.Fatal(err)
	}
	reqs := srv.requests(t)
	toolMsg := reqs[1][len(reqs[1])-1]
	content := fmt.Sprint(toolMsg["content"])
	if !strings.Contains(content, "[truncated to protect the budget") || !strings.Contains(content, "log line of a long build output") {
		t.Fatalf("tool result not truncated with a hint: %.300s", content)
	}
	if res.Stats.Truncated != 1 {
		t.Errorf("truncated = %d", res.Stats.Truncated)
	}
	// What the worker holds before its last turn leaves the final reserve.
	if res.Stats.WorkerTokens > b.WorkerContextMax-b.FinalReserve+50 {
		t.Errorf("worker at ~%d tokens, reserve %d of %d not kept", res.Stats.WorkerTokens, b.FinalReserve, b.WorkerContextMax)
	}
}

func TestWorkerSummaryTooLong(t *testing.T) {
	msgs, _ := smallRange()
	b := DefaultBudgets()
	b.SummaryTarget, b.SummaryMax = 50, 100
	long := `{"text":"` + strings.Repeat("word ", 200) + `"}`

	model, srv := newModel(t,
		turn{calls: []summary.ToolCall{call(ToolSummary, long)}},
		turn{calls: []summary.ToolCall{call(ToolSummary, `{"text":"## Goal\nShort."}`)}},
	)
	res, err := (&Worker{Model: model, Budgets: b}).Run(context.Background(), Input{Messages: msgs})
	if err != nil || res.Summary != "## Goal\nShort." {
		t.Fatalf("shortened: %v, %+v", err, res)
	}
	if !strings.Contains(fmt.Sprint(srv.requests(t)[1]), "over the limit of 100") {
		t.Error("no request to shorten")
	}

	model, _ = newModel(t, turn{calls: []summary.ToolCall{call(ToolSummary, long)}})
	_, err = (&Worker{Model: model, Budgets: b}).Run(context.Background(), Input{Messages: msgs})
	if !errors.Is(err, ErrSummaryTooLong) {
		t.Errorf("twice too long: %v", err)
	}
}

func TestWorkerMaxTurns(t *testing.T) {
	msgs, _ := smallRange()
	b := DefaultBudgets()
	b.MaxTurns = 3
	model, srv := newModel(t, turn{calls: []summary.ToolCall{call(ToolSearch, `{"query":"x"}`)}})
	_, err := (&Worker{Model: model, Budgets: b}).Run(context.Background(), Input{Messages: msgs})
	if !errors.Is(err, ErrMaxTurns) || len(srv.requests(t)) != 3 {
		t.Errorf("err = %v after %d requests", err, len(srv.requests(t)))
	}
}

func TestWorkerHardStop(t *testing.T) {
	msgs, _ := smallRange()
	b := DefaultBudgets()
	// The provider counts far more than chars/4: its own figure decides.
	model, srv := newModel(t, turn{calls: []summary.ToolCall{call(ToolSearch, `{"query":"x"}`)}, promptTokens: 60000})
	_, err := (&Worker{Model: model, Budgets: b}).Run(context.Background(), Input{Messages: msgs})
	if !errors.Is(err, ErrWorkerBudget) || len(srv.requests(t)) != 1 {
		t.Errorf("err = %v after %d requests", err, len(srv.requests(t)))
	}
}

func TestDryRunRejectsLargeResult(t *testing.T) {
	_, retained := smallRange()
	b := DefaultBudgets()
	b.ResultContextMax = 100
	_, err := DryRun(strings.Repeat("s", 800), nil, retained, b)
	if !errors.Is(err, ErrResultTooLarge) || !strings.Contains(err.Error(), "resultContextMaxTokens 100") {
		t.Errorf("err = %v", err)
	}
}

func TestToolsStayInBounds(t *testing.T) {
	msgs, _ := smallRange()
	ws := newWorkspace(t, map[string]string{"a.txt": strings.Repeat("a", 4000), "b.txt": strings.Repeat("b", 4000), "c.txt": "c"})
	b := DefaultBudgets()
	b.AutoReadBudget = 1500
	st := &toolState{r: NewRange(msgs), ws: ws, b: b}
	for _, tc := range []struct {
		tool, args string
		isErr      bool
		want       string
	}{
		{ToolReadItems, `{"from":5,"to":99}`, false, "out of bounds"},
		{ToolReadItems, `{"from":9}`, true, "retained tail is out of bounds"},
		{ToolReadItems, `{"ids":["r0000009","r0000001"]}`, false, "entry r0000009 is not in the range"},
		{ToolSearch, `{"query":"","to":50}`, false, "out of bounds"},
		{ToolReadFile, `{"path":"../etc/passwd"}`, true, "outside the workspace"},
		{ToolReadFile, `{"path":"/etc/passwd"}`, true, "outside the workspace"},
		{ToolMarkRead, `{"path":"a.txt"}`, false, "a.txt marked"},
		{ToolMarkRead, `{"path":"b.txt"}`, true, "does not fit the auto-read budget"},
		{ToolMarkRead, `{"path":"c.txt"}`, false, "c.txt marked"},
		{ToolReference, `{"path":"../x"}`, true, "outside the workspace"},
		{ToolReadItems, `{"mode":"raw"}`, true, "mode must be"},
		{ToolSearch, `not json`, true, "not the documented JSON"},
		{"rm_rf", `{}`, true, "unknown tool"},
	} {
		got, isErr := st.run(summary.ToolCall{Name: tc.tool, Arguments: []byte(tc.args)})
		if isErr != tc.isErr || !strings.Contains(got, tc.want) {
			t.Errorf("%s %s = %v %q, want %v %q", tc.tool, tc.args, isErr, got, tc.isErr, tc.want)
		}
	}
	if st.markedTok > b.AutoReadBudget {
		t.Errorf("auto-read %d over its budget %d", st.markedTok, b.AutoReadBudget)
	}
	built := ws.BuildMessage(st.marked, st.refs, workspaceBuild(b))
	if built.FileTokens > b.AutoReadBudget || strings.Contains(built.Text, "bbbb") {
		t.Errorf("built auto-read: %d tokens", built.FileTokens)
	}
}

func TestSearchSnippetSurvivesCaseFolding(t *testing.T) {
	// "İ" lower-cases to two runes: offsets in the folded text run past
	// the original.
	text := strings.Repeat("İ", 200) + " needle"
	st := &toolState{r: NewRange([]session.Message{msg("s0000001", `{"role":"user","content":"`+text+`"}`)}), b: DefaultBudgets()}
	out, isErr := st.run(summary.ToolCall{Name: ToolSearch, Arguments: []byte(`{"query":"needle"}`)})
	if isErr || !strings.Contains(out, "#1 s0000001 user") {
		t.Errorf("search = %v %q", isErr, out)
	}
}

// TestWorkerWithoutWorkspace: with no workspace the worker is not offered
// the file tools and its system prompt says they are off; a call of one
// anyway is refused, and the compaction still completes.
func TestWorkerWithoutWorkspace(t *testing.T) {
	msgs, retained := smallRange()
	model, srv := newModel(t,
		turn{calls: []summary.ToolCall{call(ToolReadFile, `{"path":".ssh/id_ed25519"}`)}},
		turn{calls: []summary.ToolCall{call(ToolSummary, `{"text":"## Goal\nFix the flaky parser test."}`)}},
	)
	w := &Worker{Model: model, Budgets: DefaultBudgets()}
	res, err := w.Run(context.Background(), Input{Messages: msgs, Retained: retained})
	if err != nil {
		t.Fatal(err)
	}
	if res.AutoRead != nil {
		t.Errorf("auto-read = %+v", res.AutoRead)
	}
	srv.mu.Lock()
	bodies := append([][]byte(nil), srv.bodies...)
	srv.mu.Unlock()
	var req struct {
		Messages []struct {
			Role    string `json:"role"`
			Content any    `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(bodies[0], &req); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range req.Tools {
		names = append(names, tl.Function.Name)
	}
	if strings.Join(names, ",") != "search_session_log,read_session_items,write_summary" {
		t.Errorf("tools offered = %v", names)
	}
	if sys := fmt.Sprint(req.Messages[0].Content); req.Messages[0].Role != "system" || !strings.Contains(sys, "workspace file tools (read_file, mark_read_required, add_reference) are off") {
		t.Errorf("system prompt = %.400s", sys)
	}
	if !strings.Contains(string(bodies[1]), "the workspace file tools are off") {
		t.Errorf("the refused call: %.400s", bodies[1])
	}
}
