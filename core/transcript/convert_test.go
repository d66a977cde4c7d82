package transcript

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/pith-dev/pith/core/prompts"
	"github.com/pith-dev/pith/core/session"
)

type llmMessage struct {
	Role      string            `json:"role"`
	Content   []json.RawMessage `json:"content"`
	Timestamp int64             `json:"timestamp"`
}

func convertOne(t *testing.T, m session.Message) (llmMessage, map[string]any) {
	t.Helper()
	out := ConvertForLLM([]session.Message{m})
	if len(out) != 1 {
		t.Fatalf("%s: %d messages", m.Role, len(out))
	}
	var lm llmMessage
	var fields map[string]any
	if err := json.Unmarshal(out[0], &lm); err != nil {
		t.Fatalf("%s: %v: %s", m.Role, err, out[0])
	}
	json.Unmarshal(out[0], &fields)
	return lm, fields
}

func onlyText(t *testing.T, lm llmMessage) string {
	t.Helper()
	if lm.Role != "user" || len(lm.Content) != 1 {
		t.Fatalf("want a user message with one block, got %+v", lm)
	}
	var blk struct{ Type, Text string }
	json.Unmarshal(lm.Content[0], &blk)
	if blk.Type != "text" {
		t.Fatalf("block %s", lm.Content[0])
	}
	return blk.Text
}

// TestConvertForLLMSummaries: a compaction summary and a branch summary
// become a user message whose text is a one-line frame, a blank line and
// the summary in <summary> tags (docs/behaviour.md §2.5) — the frames saying what the
// summary is; bookkeeping fields are gone and the time is in milliseconds.
func TestConvertForLLMSummaries(t *testing.T) {
	const summary = "## Goal\nShip <it> & more."
	for _, tc := range []struct {
		msg   session.Message
		frame string
		about string
	}{
		{session.NewCompactionSummary(summary, 1234, "2026-11-02T09:15:39.000Z", "c1"), prompts.CompactionFrame, "summar"},
		{session.NewBranchSummary(summary, "abcd1234", "2026-11-02T09:15:39.000Z", "b1"), prompts.BranchFrame, "branch"},
	} {
		lm, fields := convertOne(t, tc.msg)
		text := onlyText(t, lm)
		frame, rest, ok := strings.Cut(text, "\n\n")
		if !ok || frame != tc.frame || strings.Contains(frame, "\n") || !strings.Contains(strings.ToLower(frame), tc.about) {
			t.Errorf("%s: frame %q", tc.msg.Role, frame)
		}
		if rest != "<summary>\n"+summary+"\n</summary>" {
			t.Errorf("%s: wrapped %q", tc.msg.Role, rest)
		}
		if lm.Timestamp != 1793610939000 {
			t.Errorf("%s: timestamp %d", tc.msg.Role, lm.Timestamp)
		}
		for _, k := range []string{"summary", "tokensBefore", "fromId"} {
			if _, ok := fields[k]; ok {
				t.Errorf("%s: %s kept", tc.msg.Role, k)
			}
		}
		if out := ConvertForLLM([]session.Message{tc.msg}); bytes.Contains(out[0], []byte(`\u003c`)) {
			t.Errorf("%s: HTML-escaped: %s", tc.msg.Role, out[0])
		}
	}
}

// TestConvertForLLMCustomAndBash: custom messages keep their content as a
// user message (a string becomes one text block, images stay), without
// customType/display/details; bash runs become pi's "Ran `cmd`" text with
// the whole output; excluded runs and unknown roles are left out.
func TestConvertForLLMCustomAndBash(t *testing.T) {
	msg := func(raw string) session.Message {
		var r struct{ Role string }
		json.Unmarshal([]byte(raw), &r)
		return session.Message{Role: r.Role, Raw: json.RawMessage(raw)}
	}
	lm, fields := convertOne(t, msg(`{"role":"custom","customType":"keeper","content":"Always run gofmt.","display":true,"details":{"x":1},"timestamp":5}`))
	if onlyText(t, lm) != "Always run gofmt." || lm.Timestamp != 5 {
		t.Errorf("custom string: %+v", lm)
	}
	for _, k := range []string{"customType", "display", "details"} {
		if _, ok := fields[k]; ok {
			t.Errorf("custom: %s kept", k)
		}
	}
	img := `[{"type":"text","text":"see"},{"type":"image","data":"AAAA","mimeType":"image/png"}]`
	lm, _ = convertOne(t, msg(`{"role":"custom","customType":"shot","content":`+img+`,"display":false,"timestamp":6}`))
	if got, _ := json.Marshal(lm.Content); lm.Role != "user" || string(got) != img {
		t.Errorf("custom blocks: %s", got)
	}

	long := strings.Repeat("x", 5000)
	for _, tc := range []struct{ raw, want string }{
		{`{"role":"bashExecution","command":"go test","output":"` + long + `","exitCode":1,"cancelled":false,"truncated":false,"timestamp":7}`,
			"Ran `go test`\n```\n" + long + "\n```\n\nCommand exited with code 1"},
		{`{"role":"bashExecution","command":"ls","output":"","exitCode":0,"cancelled":false,"truncated":false,"timestamp":7}`,
			"Ran `ls`\n(no output)"},
		{`{"role":"bashExecution","command":"sleep 9","output":"z","exitCode":null,"cancelled":true,"truncated":true,"fullOutputPath":"/tmp/o","timestamp":7}`,
			"Ran `sleep 9`\n```\nz\n```\n\n(command cancelled)\n\n[Output truncated. Full output: /tmp/o]"},
	} {
		lm, _ := convertOne(t, msg(tc.raw))
		if got := onlyText(t, lm); got != tc.want {
			t.Errorf("bash: %.120q, want %.120q", got, tc.want)
		}
	}

	kept := []session.Message{
		msg(`{"role":"user","content":"hi","timestamp":1}`),
		msg(`{"role":"assistant","content":[{"type":"toolCall","id":"c","name":"bash","arguments":{"command":"ls"}}],"provider":"p","model":"m","stopReason":"toolUse","timestamp":2}`),
		msg(`{"role":"toolResult","toolCallId":"c","toolName":"bash","content":[{"type":"text","text":"a"}],"isError":false,"details":{"d":1},"timestamp":3}`),
	}
	dropped := []session.Message{
		msg(`{"role":"bashExecution","command":"secret","output":"","exitCode":0,"cancelled":false,"truncated":false,"excludeFromContext":true,"timestamp":8}`),
		msg(`{"role":"somethingNew","timestamp":9}`),
	}
	out := ConvertForLLM(append(append([]session.Message{}, kept...), dropped...))
	if len(out) != len(kept) {
		t.Fatalf("%d messages, want %d", len(out), len(kept))
	}
	for i, m := range kept {
		if !bytes.Equal(out[i], m.Raw) {
			t.Errorf("%s changed: %s", m.Role, out[i])
		}
	}
}
