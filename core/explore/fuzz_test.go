package explore

import (
	"strings"
	"testing"

	"github.com/pith-dev/pith/core/summary"
)

// FuzzToolCalls: whatever a model writes as tool name and arguments, a
// tool answers with text and never panics, reads outside the workspace or
// past the range.
func FuzzToolCalls(f *testing.F) {
	for _, seed := range []struct{ tool, args string }{
		{ToolSearch, `{"query":"parser","from":-5,"to":1e9,"limit":-1}`},
		{ToolReadItems, `{"from":9223372036854775807,"to":-9223372036854775808}`},
		{ToolReadItems, `{"ids":[null,"",1],"mode":"full"}`},
		{ToolReadFile, `{"path":"../../etc/passwd","offset":-1,"limit":1e300}`},
		{ToolReadFile, `{"path":"\u0000"}`},
		{ToolMarkRead, `{"path":"/"}`},
		{ToolReference, `{"path":"","note":null}`},
		{ToolSummary, `{"text":12}`},
		{"", `[]`},
	} {
		f.Add(seed.tool, seed.args)
	}
	msgs, _ := smallRange()
	ws := newWorkspace(f, map[string]string{"a.go": "package a\n"})
	f.Fuzz(func(t *testing.T, tool, args string) {
		st := &toolState{r: NewRange(msgs), ws: ws, b: DefaultBudgets()}
		out, _ := st.run(summary.ToolCall{Name: tool, Arguments: []byte(args)})
		if strings.Contains(out, "RETAINED-TAIL-SECRET") || strings.Contains(out, "root:x:0:0") {
			t.Fatalf("out of bounds: %q", out)
		}
	})
}
