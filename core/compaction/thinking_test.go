package compaction

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/pith-dev/pith/store/files"
)

// thinkingMsg is an assistant message with a thinking block (signed, as
// Anthropic writes it), a text and a tool call.
func thinkingMsg(thinking int) string {
	return `{"role":"assistant","content":[{"type":"thinking","thinking":"` + text(thinking) + `","thinkingSignature":"c2lnbmF0dXJl"},` +
		`{"type":"text","text":"Looking."},{"type":"toolCall","id":"c","name":"ls","arguments":{"path":"."}}],"stopReason":"toolUse"}`
}

// TestPruneThinkingAndRestore: with Thinking 2, the thinking blocks of all
// but the newest two assistant messages go (everything else in their lines
// unchanged), into the same archive as tool outputs; Restore gives the
// file back byte for byte.
func TestPruneThinkingAndRestore(t *testing.T) {
	b := &builder{}
	b.user(1)
	for range 5 {
		b.msg(thinkingMsg(2000))
		b.msg(`{"role":"toolResult","toolCallId":"c","toolName":"ls","content":[{"type":"text","text":"a b"}],"isError":false}`)
	}
	orig := b.data()
	sessPath := filepath.Join(t.TempDir(), "s.jsonl")
	if err := os.WriteFile(sessPath, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	store, err := files.Open(sessPath, files.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	s := PruneSettings{Protect: 40000, Minimum: 1000, Thinking: 2}
	if p := PlanPrune(store.Tree().Path(store.Leaf()), PruneSettings{Protect: 40000, Minimum: 1000}); len(p.Items) != 0 {
		t.Fatalf("thinking pruned with Thinking 0: %+v", p)
	}
	plan, err := Prune(store, s, time.UnixMilli(1767225600000))
	if err != nil || len(plan.Items) != 3 || plan.Saving != 6000 {
		t.Fatalf("plan %+v, %v", plan, err)
	}
	after, _ := os.ReadFile(sessPath)
	pruned, kept := 0, 0
	for _, l := range bytes.Split(bytes.TrimSpace(after), []byte("\n")) {
		m := gjson.GetBytes(l, "message")
		if m.Get("role").Str != "assistant" {
			continue
		}
		hasThinking := strings.Contains(m.Get("content").Raw, `"thinking"`)
		switch {
		case m.Get("prunedAt").Exists() && !hasThinking:
			pruned++
			if m.Get("content.#").Int() != 2 || m.Get("content.0.text").Str != "Looking." || m.Get("content.1.name").Str != "ls" {
				t.Errorf("pruned message lost more than its thinking: %s", m.Get("content").Raw)
			}
		case !m.Get("prunedAt").Exists() && hasThinking:
			kept++
		default:
			t.Errorf("assistant line %s", l)
		}
	}
	if pruned != 3 || kept != 2 {
		t.Fatalf("pruned %d, kept %d", pruned, kept)
	}
	// Pruned once is pruned: nothing more to do.
	if p := PlanPrune(store.Tree().Path(store.Leaf()), s); len(p.Items) != 0 {
		t.Fatalf("pruned again: %+v", p)
	}
	res, err := Restore(store)
	if err != nil || res.Restored != 3 || len(res.Refused) != 0 {
		t.Fatalf("restore %+v, %v", res, err)
	}
	if got, _ := os.ReadFile(sessPath); !bytes.Equal(got, orig) {
		t.Fatal("restored file differs from the original")
	}
}
