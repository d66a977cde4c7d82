package transcript

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/pith-dev/pith/core/prompts"
	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/core/tokens"
)

// text is ASCII text of exactly n estimated tokens.
func text(n int) string { return strings.Repeat("x", 4*n) }

func msg(role, raw string) session.Message {
	return session.Message{Role: role, Raw: []byte(raw)}
}

func TestSerializeConversation(t *testing.T) {
	long := strings.Repeat("a", 2100)
	tests := []struct {
		name string
		msgs []session.Message
		want string
	}{
		{"user string and blocks", []session.Message{
			msg("user", `{"role":"user","content":"hi"}`),
			msg("user", `{"role":"user","content":[{"type":"text","text":"a"},{"type":"image","data":"x"},{"type":"text","text":"b"}]}`),
			msg("user", `{"role":"user","content":[{"type":"image","data":"x"}]}`),
		}, "[User]: hi\n\n[User]: ab"},
		{"assistant parts in order", []session.Message{
			msg("assistant", `{"role":"assistant","content":[{"type":"text","text":"t1"},{"type":"thinking","thinking":"th1"},{"type":"toolCall","id":"1","name":"read","arguments":{"path":"/a","z":1.0,"10":"x","2":1e2,"a":{"b":[-0,"\u00e9\/<"]}}},{"type":"text","text":"t2"},{"type":"thinking","thinking":"th2"},{"type":"toolCall","id":"2","name":"ls","arguments":{}}]}`),
		}, "[Assistant thinking]: th1\nth2\n\n[Assistant]: t1\nt2\n\n" +
			`[Assistant tool calls]: read(2=100, 10="x", path="/a", z=1, a={"b":[0,"é/<"]}); ls()`},
		{"string escapes in arguments", []session.Message{
			msg("assistant", `{"role":"assistant","content":[{"type":"toolCall","id":"1","name":"w","arguments":{"s":"q\"b\\n\nt\t\u0001\ud83d\ude00\ud800x","n":1e21,"m":1e-7,"k":0.000001}}]}`),
		}, `[Assistant tool calls]: w(s="q\"b\\n\nt\t\u0001😀\ud800x", n=1e+21, m=1e-7, k=0.000001)`},
		{"tool result clipped", []session.Message{
			msg("toolResult", `{"role":"toolResult","toolCallId":"1","content":[{"type":"text","text":"`+long+`"}]}`),
		}, "[Tool result]: " + long[:2000] + "\n\n[... 100 more characters truncated]"},
		{"thinking clipped (pi does not)", []session.Message{
			msg("assistant", `{"role":"assistant","content":[{"type":"thinking","thinking":"`+long+`"}]}`),
		}, "[Assistant thinking]: " + long[:2000] + "\n\n[... 100 more characters truncated]"},
		{"clip counts UTF-16 units and never leaves half a pair", []session.Message{
			msg("toolResult", `{"role":"toolResult","content":[{"type":"text","text":"`+strings.Repeat("a", 1999)+`😀😀"}]}`),
		}, "[Tool result]: " + strings.Repeat("a", 1999) + "\uFFFD\n\n[... 3 more characters truncated]"},
		{"custom message is user text, clipped", []session.Message{
			msg("custom", `{"role":"custom","customType":"x","content":"`+long+`"}`),
		}, "[User]: " + long[:2000] + "\n\n[... 100 more characters truncated]"},
		{"bash runs", []session.Message{
			msg("bashExecution", `{"role":"bashExecution","command":"make","output":"ok","exitCode":0}`),
			msg("bashExecution", `{"role":"bashExecution","command":"false","output":"","exitCode":2}`),
			msg("bashExecution", `{"role":"bashExecution","command":"sleep","output":"","exitCode":null,"cancelled":true}`),
			msg("bashExecution", `{"role":"bashExecution","command":"cat","output":"x","exitCode":0,"truncated":true,"fullOutputPath":"/tmp/o"}`),
			msg("bashExecution", `{"role":"bashExecution","command":"secret","output":"x","excludeFromContext":true}`),
		}, "[User]: Ran `make`\n```\nok\n```\n\n" +
			"[User]: Ran `false`\n(no output)\n\nCommand exited with code 2\n\n" +
			"[User]: Ran `sleep`\n(no output)\n\n(command cancelled)\n\n" +
			"[User]: Ran `cat`\n```\nx\n```\n\n[Output truncated. Full output: /tmp/o]"},
		{"summaries are framed user text", []session.Message{
			session.NewBranchSummary("B", "x", "", ""),
			session.NewCompactionSummary("C", 1, "", ""),
		}, "[User]: " + prompts.BranchSummaryText("B") + "\n\n[User]: " + prompts.CompactionSummaryText("C")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := SerializeConversation(tt.msgs); got != tt.want {
				t.Fatalf("got\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

func TestJSNumber(t *testing.T) {
	for in, want := range map[float64]string{
		1: "1", 100: "100", -0.5: "-0.5", 0.001: "0.001", 1e21: "1e+21", 1e-7: "1e-7",
		1.23e-18: "1.23e-18", 1.2345678901234569e+23: "1.2345678901234569e+23", 123456789: "123456789",
	} {
		if got := jsNumber(in); got != want {
			t.Errorf("jsNumber(%v) = %s, want %s", in, got, want)
		}
	}
}

func TestFitConversation(t *testing.T) {
	var msgs []session.Message
	msgs = append(msgs, msg("user", `{"role":"user","content":"first request"}`))
	for range 20 {
		msgs = append(msgs, msg("assistant", `{"role":"assistant","content":[{"type":"text","text":"`+text(100)+`"}]}`))
	}
	msgs = append(msgs, msg("user", `{"role":"user","content":"last"}`))
	full := SerializeConversation(msgs)

	t.Run("fits unchanged", func(t *testing.T) {
		f, err := FitConversation(msgs, 100000)
		if err != nil || f.Text != full || f.OmittedMessages != 0 {
			t.Fatalf("%v %d", err, f.OmittedMessages)
		}
	})
	t.Run("no budget", func(t *testing.T) {
		f, err := FitConversation(msgs, 0)
		if err != nil || f.Text != full {
			t.Fatal(err)
		}
	})
	t.Run("drops the oldest middle", func(t *testing.T) {
		f, err := FitConversation(msgs, 600)
		if err != nil {
			t.Fatal(err)
		}
		if f.Tokens > 600 || tokens.EstimateText(f.Text) != f.Tokens {
			t.Fatalf("tokens %d (text %d)", f.Tokens, tokens.EstimateText(f.Text))
		}
		if !strings.HasPrefix(f.Text, "[User]: first request\n\n[... ") || !strings.HasSuffix(f.Text, "[User]: last") {
			t.Fatalf("text %q", f.Text[:80])
		}
		// 5 assistant messages of ~104 tokens fit besides the rest.
		kept := strings.Count(f.Text, "[Assistant]: ")
		if kept+f.OmittedMessages != 20 || kept < 4 {
			t.Fatalf("kept %d omitted %d", kept, f.OmittedMessages)
		}
		if !strings.Contains(f.Text, "[... "+strconv.Itoa(f.OmittedMessages)+" older messages") {
			t.Fatalf("marker missing: %q", f.Text[:120])
		}
	})
	t.Run("too large even without the middle", func(t *testing.T) {
		_, err := FitConversation(msgs, 20)
		if !errors.Is(err, ErrInputTooLarge) {
			t.Fatalf("err = %v", err)
		}
	})
}
