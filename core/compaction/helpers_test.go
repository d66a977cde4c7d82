package compaction

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/pith-dev/pith/core/session"
)

// builder writes a linear session, one entry per call, and returns ids so
// tests can name entries. Token sizes are exact: text of 4n ASCII
// characters estimates to n tokens.
type builder struct {
	lines  []string
	parent string
	n      int
}

const testHeader = `{"type":"session","version":3,"id":"00000000-0000-4000-8000-000000000000","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}`

func text(tokens int) string { return strings.Repeat("x", 4*tokens) }

func (b *builder) add(typ, fields string) string {
	b.n++
	id := fmt.Sprintf("%08x", b.n)
	parent := "null"
	if b.parent != "" {
		parent = strconv.Quote(b.parent)
	}
	line := `{"type":"` + typ + `","id":"` + id + `","parentId":` + parent + `,"timestamp":"2026-01-01T00:00:00.000Z"`
	if fields != "" {
		line += "," + fields
	}
	b.lines = append(b.lines, line+"}")
	b.parent = id
	return id
}

func (b *builder) msg(m string) string { return b.add("message", `"message":`+m) }

func (b *builder) user(tokens int) string {
	return b.msg(`{"role":"user","content":[{"type":"text","text":"` + text(tokens) + `"}]}`)
}

// assistant writes an assistant message with a text of the given size and
// tool calls given as "id:name:argsJSON".
func (b *builder) assistant(tokens int, calls ...string) string {
	content := `[{"type":"text","text":"` + text(tokens) + `"}`
	for _, c := range calls {
		parts := strings.SplitN(c, ":", 3)
		args := "{}"
		if len(parts) == 3 {
			args = parts[2]
		}
		content += `,{"type":"toolCall","id":"` + parts[0] + `","name":"` + parts[1] + `","arguments":` + args + `}`
	}
	return b.msg(`{"role":"assistant","content":` + content + `],"stopReason":"stop"}`)
}

func (b *builder) assistantUsage(tokens, input int) string {
	return b.msg(`{"role":"assistant","content":[{"type":"text","text":"` + text(tokens) + `"}],"stopReason":"stop","usage":{"input":` +
		strconv.Itoa(input) + `,"output":10,"cacheRead":0,"cacheWrite":0,"totalTokens":` + strconv.Itoa(input+10) + `}}`)
}

func (b *builder) result(callID, tool string, tokens int) string {
	return b.msg(`{"role":"toolResult","toolCallId":"` + callID + `","toolName":"` + tool +
		`","content":[{"type":"text","text":"` + text(tokens) + `"}],"isError":false}`)
}

func (b *builder) bash(tokens int) string {
	return b.msg(`{"role":"bashExecution","command":"ls","output":"` + text(tokens)[2:] + `","exitCode":0,"cancelled":false,"truncated":false}`)
}

func (b *builder) modelChange() string {
	return b.add("model_change", `"provider":"p","modelId":"m"`)
}

func (b *builder) thinking() string { return b.add("thinking_level_change", `"thinkingLevel":"high"`) }

func (b *builder) customMessage(tokens int) string {
	return b.add("custom_message", `"customType":"note","content":"`+text(tokens)+`","display":true`)
}

func (b *builder) compaction(firstKept, summary, details string) string {
	f := `"summary":` + strconv.Quote(summary) + `,"firstKeptEntryId":"` + firstKept + `","tokensBefore":1000`
	if details != "" {
		f += `,"details":` + details
	}
	return b.add("compaction", f)
}

func (b *builder) data() []byte {
	return []byte(testHeader + "\n" + strings.Join(b.lines, "\n") + "\n")
}

func (b *builder) file(t testing.TB) *session.File {
	t.Helper()
	f, err := session.Parse(b.data())
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func (b *builder) path(t testing.TB) []*session.Entry {
	t.Helper()
	f := b.file(t)
	tree := session.NewTree(f.Entries)
	return tree.Path(tree.Last())
}

// indexOf returns the path index of id.
func indexOf(t testing.TB, path []*session.Entry, id string) int {
	t.Helper()
	for i, e := range path {
		if e.ID == id {
			return i
		}
	}
	t.Fatalf("no entry %s on the path", id)
	return -1
}

func jsonOf(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}
