package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/pith-dev/pith/hooks"
	"github.com/pith-dev/pith/sdk"
	"github.com/pith-dev/pith/sdk/sdktest"
)

var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "enterprise-summarizer-test-")
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

// secrets appear in the fixture conversation; none may reach the summarizer.
var secrets = []string{
	"sk-proj-AbCdEf0123456789xyzXYZ",
	"AKIAIOSFODNN7EXAMPLE",
	"ghp_0123456789abcdefghijABCDEFGHIJ0123",
	"xoxb-123456789012-abcdefABCDEF",
	"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
	"MIIEowIBAAKCAQEA",
	"hunter2",
	"jane@example.com",
	"tok3nTok3nTok3nTok3n",
}

func preparation() sdk.Preparation {
	return sdk.Preparation{
		FirstKeptEntryID: "a5",
		TokensBefore:     91234,
		MessagesToSummarize: []json.RawMessage{
			json.RawMessage(`{"role":"user","content":"Deploy with key sk-proj-AbCdEf0123456789xyzXYZ and mail jane@example.com","timestamp":1}`),
			json.RawMessage(`{"role":"assistant","content":[{"type":"thinking","thinking":"the AWS key is AKIAIOSFODNN7EXAMPLE"},{"type":"text","text":"Checking the config."},{"type":"toolCall","id":"t1","name":"bash","arguments":{"command":"curl -H 'Authorization: Bearer tok3nTok3nTok3nTok3n' https://ci:hunter2@ci.internal/api"}}],"stopReason":"toolUse"}`),
			json.RawMessage(`{"role":"toolResult","toolCallId":"t1","toolName":"bash","content":[{"type":"text","text":"GITHUB_TOKEN=ghp_0123456789abcdefghijABCDEFGHIJ0123\nSLACK=xoxb-123456789012-abcdefABCDEF\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----"}],"isError":false}`),
			json.RawMessage(`{"role":"bashExecution","command":"echo $JWT","output":"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U","exitCode":0,"cancelled":false,"truncated":false}`),
		},
		ReadFiles:     []string{"deploy/README.md"},
		ModifiedFiles: []string{"deploy/config.yaml"},
		ReserveTokens: 10000,
	}
}

// recorder is a summarizer stand-in that records its requests.
type recorder struct {
	mu   sync.Mutex
	reqs []hooks.CompleteRequest
	resp hooks.CompleteResponse
	err  error
}

func (r *recorder) complete(_ context.Context, req hooks.CompleteRequest) (hooks.CompleteResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reqs = append(r.reqs, req)
	return r.resp, r.err
}

func (r *recorder) requests() []hooks.CompleteRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]hooks.CompleteRequest(nil), r.reqs...)
}

func TestSuppliesRedactedCompaction(t *testing.T) {
	rec := &recorder{resp: hooks.CompleteResponse{Text: "## Goal\nDeploy. Contact admin@corp.example.org.\n", FinishReason: "stop", Model: "m"}}
	h := sdktest.InProcess(t, &summarizer{maxInputChars: 400_000}, sdktest.WithHost(&sdktest.FakeHost{CompleteFunc: rec.complete}))
	res, err := h.BeforeCompact(context.Background(), &sdk.BeforeCompactEvent{
		SessionID: "s1", Reason: sdk.ReasonManual, Preparation: preparation(),
		CustomInstructions: "focus on the deploy to ops@example.com",
	})
	if err != nil {
		t.Fatal(err)
	}
	if res == nil || res.Compaction == nil {
		t.Fatalf("want a compaction, got %+v", res)
	}
	reqs := rec.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d completions, want 1", len(reqs))
	}
	req := reqs[0]
	for _, s := range append(secrets, "ops@example.com") {
		if strings.Contains(req.Prompt, s) || strings.Contains(req.SystemPrompt, s) {
			t.Errorf("secret %q reached the summarizer", s)
		}
	}
	for _, want := range []string{
		"<conversation>\n[User]: Deploy with key [REDACTED:api-key] and mail [REDACTED:email]\n\n[Assistant thinking]: the AWS key is [REDACTED:aws-access-key]\n\n[Assistant]: Checking the config.\n\n[Assistant tool calls]: bash(command=\"curl -H 'Authorization: Bearer [REDACTED:bearer-token]' https://ci:[REDACTED:password]@ci.internal/api\")",
		"[Tool result]: GITHUB_TOKEN=[REDACTED:github-token]\nSLACK=[REDACTED:slack-token]\n[REDACTED:private-key]",
		"[User]: Ran `echo $JWT`\n[REDACTED:jwt]\n</conversation>",
		"## Critical Context",
		"Additional focus: focus on the deploy to [REDACTED:email]",
	} {
		if !strings.Contains(req.Prompt, want) {
			t.Errorf("prompt lacks %q\nprompt:\n%s", want, req.Prompt)
		}
	}
	if strings.Contains(req.Prompt, "<previous-summary>") || strings.Contains(req.Prompt, "<turn-prefix>") {
		t.Error("no previous summary or turn prefix was given")
	}
	if req.MaxTokens != 8000 {
		t.Errorf("MaxTokens = %d, want 0.8 × reserve = 8000", req.MaxTokens)
	}
	c := res.Compaction
	if c.FirstKeptEntryID != "a5" || c.TokensBefore != 91234 {
		t.Errorf("compaction %+v: want firstKeptEntryId a5, tokensBefore 91234", c)
	}
	wantSummary := "## Goal\nDeploy. Contact [REDACTED:email].\n\n<read-files>\ndeploy/README.md\n</read-files>\n\n<modified-files>\ndeploy/config.yaml\n</modified-files>"
	if c.Summary != wantSummary {
		t.Errorf("summary\n got %q\nwant %q", c.Summary, wantSummary)
	}
	var details struct {
		ReadFiles, ModifiedFiles []string
		Redactions               map[string]int
	}
	if err := json.Unmarshal(c.Details, &details); err != nil {
		t.Fatal(err)
	}
	wantCounts := map[string]int{"api-key": 1, "aws-access-key": 1, "bearer-token": 1, "email": 2, "github-token": 1, "jwt": 1, "private-key": 1, "slack-token": 1, "url-password": 1}
	if !reflect.DeepEqual(details.Redactions, wantCounts) || len(details.ReadFiles) != 1 || len(details.ModifiedFiles) != 1 {
		t.Errorf("details %s", c.Details)
	}
}

func TestUpdateAndSplitTurnPrompt(t *testing.T) {
	rec := &recorder{resp: hooks.CompleteResponse{Text: "ok", FinishReason: "stop"}}
	h := sdktest.InProcess(t, &summarizer{maxInputChars: 400_000}, sdktest.WithHost(&sdktest.FakeHost{CompleteFunc: rec.complete}))
	p := preparation()
	p.PreviousSummary = "## Goal\nold goal, ask bob@example.net"
	p.TurnPrefixMessages = []json.RawMessage{json.RawMessage(`{"role":"user","content":"now the second half"}`)}
	p.IsSplitTurn = true
	p.ReserveTokens = 0
	if _, err := h.BeforeCompact(context.Background(), &sdk.BeforeCompactEvent{Preparation: p, Reason: sdk.ReasonThreshold}); err != nil {
		t.Fatal(err)
	}
	req := rec.requests()[0]
	for _, want := range []string{
		"<turn-prefix>\n[User]: now the second half\n</turn-prefix>",
		"<previous-summary>\n## Goal\nold goal, ask [REDACTED:email]\n</previous-summary>",
		"updated checkpoint",
		"## Turn Context (split turn)",
	} {
		if !strings.Contains(req.Prompt, want) {
			t.Errorf("prompt lacks %q", want)
		}
	}
	if req.MaxTokens != defaultReserveTokens*8/10 {
		t.Errorf("MaxTokens %d with no reserve given", req.MaxTokens)
	}
}

func TestFailsSafe(t *testing.T) {
	tests := []struct {
		name      string
		resp      hooks.CompleteResponse
		err       error
		prep      func(*sdk.Preparation)
		wantCalls int
	}{
		{name: "completion error", err: errors.New("summarizer unavailable"), wantCalls: 1},
		{name: "empty answer", resp: hooks.CompleteResponse{Text: "  \n", FinishReason: "stop"}, wantCalls: 1},
		{name: "cut off", resp: hooks.CompleteResponse{Text: "## Goal\nhalf a sum", FinishReason: "length"}, wantCalls: 1},
		{name: "nothing to summarize", prep: func(p *sdk.Preparation) { p.MessagesToSummarize = nil }},
		{name: "unreadable message", prep: func(p *sdk.Preparation) { p.MessagesToSummarize[1] = json.RawMessage(`{"role":`) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{resp: tc.resp, err: tc.err}
			h := sdktest.InProcess(t, &summarizer{maxInputChars: 400_000}, sdktest.WithHost(&sdktest.FakeHost{CompleteFunc: rec.complete}))
			p := preparation()
			if tc.prep != nil {
				tc.prep(&p)
			}
			res, err := h.BeforeCompact(context.Background(), &sdk.BeforeCompactEvent{Preparation: p, Reason: sdk.ReasonOverflow})
			if err != nil || res != nil {
				t.Fatalf("got %+v, %v; want no result so the default compaction runs", res, err)
			}
			if n := len(rec.requests()); n != tc.wantCalls {
				t.Fatalf("%d completions, want %d", n, tc.wantCalls)
			}
		})
	}
}

func TestSerializeAndFit(t *testing.T) {
	long := strings.Repeat("x", clipChars+5)
	got, err := serialize([]json.RawMessage{
		json.RawMessage(`{"role":"toolResult","toolName":"read","content":[{"type":"text","text":"` + long + `"}]}`),
		json.RawMessage(`{"role":"assistant","content":[{"type":"toolCall","name":"edit","arguments":{"path":"a.go","b":1}}]}`),
		json.RawMessage(`{"role":"branchSummary","summary":"earlier branch"}`),
		json.RawMessage(`{"role":"user","content":[{"type":"image","data":"…"}]}`),
		json.RawMessage(`{"role":5,"content":"a role of the wrong type"}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"[Tool result]: " + long[:clipChars] + "\n\n[... 5 more characters truncated]",
		"[Assistant tool calls]: edit(b=1, path=\"a.go\")",
		"[Summary of earlier work]: earlier branch",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("serialize\n got %q\nwant %q", got, want)
	}
	// A message that is not JSON reaches serialize unread when it holds
	// nothing a redaction rule looks for: it fails as the redaction would.
	if _, err := serialize([]json.RawMessage{json.RawMessage(`not json`)}); err == nil {
		t.Error("a message that is not JSON must be an error")
	}

	blocks := []string{"first", strings.Repeat("a", 600), strings.Repeat("b", 600), strings.Repeat("c", 300), "last"}
	out, dropped := fit(blocks, 1000)
	if dropped != 2 || out[0] != "first" || !strings.Contains(out[1], "2 earlier messages omitted") || out[len(out)-1] != "last" {
		t.Fatalf("fit dropped %d: %q", dropped, out)
	}
	if out, dropped := fit(blocks, 10_000); dropped != 0 || len(out) != len(blocks) {
		t.Fatalf("fit dropped %d of a conversation that fits", dropped)
	}
}

// TestSubprocess runs the built plugin: the completion crosses the broker
// to the (fake) host and the Dispatcher validates the compaction.
func TestSubprocess(t *testing.T) {
	rec := &recorder{resp: hooks.CompleteResponse{Text: "## Goal\nship it", FinishReason: "stop", Model: "m"}}
	h := sdktest.Subprocess(t, binary, sdktest.WithHost(&sdktest.FakeHost{CompleteFunc: rec.complete}))
	ctx := context.Background()
	lim := hooks.CompactionLimits{MaxSummaryTokens: 8000, AllowedFirstKeptIDs: []string{"a1", "a5"}}
	out, err := h.Dispatcher.BeforeCompact(ctx, &sdk.BeforeCompactEvent{SessionID: "s1", Reason: sdk.ReasonThreshold, Preparation: preparation()}, lim)
	if err != nil {
		t.Fatal(err)
	}
	if out.Compaction == nil || !strings.HasPrefix(out.Compaction.Summary, "## Goal\nship it\n\n<read-files>") {
		t.Fatalf("outcome %+v: want the plugin's compaction", out)
	}
	for _, s := range secrets {
		if strings.Contains(rec.requests()[0].Prompt, s) {
			t.Errorf("secret %q crossed the wire", s)
		}
	}
	rec.mu.Lock()
	rec.err = errors.New("model down")
	rec.mu.Unlock()
	out, err = h.Dispatcher.BeforeCompact(ctx, &sdk.BeforeCompactEvent{SessionID: "s1", Reason: sdk.ReasonThreshold, Preparation: preparation()}, lim)
	if err != nil || out.Compaction != nil || out.Cancelled {
		t.Fatalf("failing summarizer: outcome %+v, %v; want nothing", out, err)
	}
}
