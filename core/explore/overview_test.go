package explore

import (
	"errors"
	"strings"
	"testing"

	"github.com/pith-dev/pith/core/session"
)

func TestOverviewAimsAtTargetWithoutToolOutput(t *testing.T) {
	prep := generated(t, 7, 5000)
	msgs := rangeMessages(prep)
	r := NewRange(msgs)
	b := DefaultBudgets()
	ov, err := BuildOverview(r, OverviewInput{PreviousSummary: prep.PreviousSummary, ReadFiles: prep.ReadFiles, ModifiedFiles: prep.ModifiedFiles}, b)
	if err != nil {
		t.Fatal(err)
	}
	if ov.Level != 0 || len(ov.Warnings) != 0 {
		t.Errorf("level %d, warnings %v", ov.Level, ov.Warnings)
	}
	if ov.Tokens > b.OverviewWarning {
		t.Errorf("overview ~%d tokens, over the warning mark %d (target %d)", ov.Tokens, b.OverviewWarning, b.OverviewTarget)
	}
	// The generator reuses text fragments: a probe that also occurs in what
	// people or the model said proves nothing.
	var said strings.Builder
	for i := 1; i <= r.Len(); i++ {
		if it := r.Item(i); it.Role != "toolResult" {
			said.WriteString(searchText(it))
		}
	}
	saidText := said.String()
	checked := 0
	for i := 1; i <= r.Len(); i++ {
		it := r.Item(i)
		if it.Role != "toolResult" {
			continue
		}
		out := strings.TrimSpace(it.Output)
		if len([]rune(out)) < 80 {
			continue
		}
		probe := string([]rune(out)[:80])
		if strings.Contains(saidText, probe) {
			continue
		}
		checked++
		if strings.Contains(ov.Text, probe) {
			t.Fatalf("overview contains the output body of item #%d: %q", i, probe)
		}
	}
	if checked < 50 {
		t.Fatalf("only %d tool outputs checked", checked)
	}
	if !strings.Contains(ov.Text, "## Tool calls, newest first") || !strings.Contains(ov.Text, "## Messages, newest first") {
		t.Errorf("overview lacks its sections:\n%.2000s", ov.Text)
	}
}

// bigPinned is a range whose first user message is long: the overview's
// fixed part alone is large.
func bigPinned(n int) *Range {
	long := strings.Repeat("word ", n)
	return NewRange([]session.Message{
		msg("a0000001", `{"role":"user","content":"`+long+`"}`),
		msg("a0000002", `{"role":"assistant","content":[{"type":"text","text":"ok"},{"type":"toolCall","id":"t1","name":"bash","arguments":{"command":"ls"}}]}`),
		msg("a0000003", `{"role":"toolResult","toolCallId":"t1","toolName":"bash","content":[{"type":"text","text":"SECRET-OUTPUT-BODY"}],"isError":false}`),
		msg("a0000004", `{"role":"user","content":"`+long+`"}`),
	})
}

func TestOverviewWarningContinues(t *testing.T) {
	b := DefaultBudgets()
	b.OverviewTarget, b.OverviewWarning, b.OverviewDeadline = 200, 400, 5000
	ov, err := BuildOverview(bigPinned(500), OverviewInput{}, b)
	if err != nil {
		t.Fatal(err)
	}
	if ov.Level != 0 || len(ov.Warnings) != 1 || !strings.Contains(ov.Warnings[0], "overviewWarningTokens 400") {
		t.Errorf("level %d, ~%d tokens, warnings %q", ov.Level, ov.Tokens, ov.Warnings)
	}
	if strings.Contains(ov.Text, "SECRET-OUTPUT-BODY") {
		t.Error("tool output body in the overview")
	}
}

func TestOverviewDeadlineFallsBack(t *testing.T) {
	b := DefaultBudgets()
	b.OverviewTarget, b.OverviewWarning, b.OverviewDeadline = 100, 200, 600
	ov, err := BuildOverview(bigPinned(2000), OverviewInput{}, b)
	if err != nil {
		t.Fatal(err)
	}
	if ov.Level == 0 || ov.Tokens > b.OverviewDeadline || !strings.Contains(ov.Warnings[0], "falling back") {
		t.Errorf("level %d, ~%d tokens, warnings %q", ov.Level, ov.Tokens, ov.Warnings)
	}
	// Deterministic: the same input gives the same overview.
	again, _ := BuildOverview(bigPinned(2000), OverviewInput{}, b)
	if again.Text != ov.Text {
		t.Error("overview is not deterministic")
	}

	b.OverviewTarget, b.OverviewWarning, b.OverviewDeadline = 10, 10, 20
	_, err = BuildOverview(bigPinned(2000), OverviewInput{}, b)
	if !errors.Is(err, ErrOverviewTooLarge) {
		t.Errorf("coarsest over the deadline: err = %v", err)
	}
}
