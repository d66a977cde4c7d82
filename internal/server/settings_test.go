package server

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/pith-dev/pith/client"
	"github.com/tidwall/gjson"
)

// twoTurns writes two user/assistant turns and returns the first user
// message's id.
func twoTurns(t *testing.T, s *client.Session) string {
	t.Helper()
	ctx := context.Background()
	first, err := s.AppendMessages(ctx, userMsg("first", 5))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []json.RawMessage{assistantMsg("answer", 5), userMsg("second", 5), assistantMsg("answer2", 5)} {
		if gjson.GetBytes(m, "role").Str == "assistant" {
			_, err = s.AfterTurn(ctx, m)
		} else {
			_, err = s.AppendMessages(ctx, m)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return gjson.GetBytes(first[0], "id").Str
}

// TestNavigateFollowsBranchSummaryEnabled: the daemon's Navigate
// summarizes by default when branchSummary.enabled is true, and not when
// the request says no_summarize.
func TestNavigateFollowsBranchSummaryEnabled(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.BranchSummary.Enabled = true
	h := startServer(t, cfg)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		opts client.NavigateOptions
		want bool
	}{
		{"default", client.NavigateOptions{}, true},
		{"no_summarize", client.NavigateOptions{NoSummarize: true}, false},
	} {
		s, err := h.client.Create(ctx, tc.name+".jsonl", "/w")
		if err != nil {
			t.Fatal(err)
		}
		nav, err := s.Navigate(ctx, twoTurns(t, s), tc.opts)
		if err != nil {
			t.Fatal(err)
		}
		if (nav.SummaryEntry != nil) != tc.want {
			t.Errorf("%s: summary entry %s", tc.name, nav.SummaryEntry)
		}
	}
}

// TestLLMContextAndAgentAbort: GetContext with llm returns the branch
// summary as a framed user message; a manual Compact tells WatchEvents
// subscribers to abort the agent's turn before the compaction starts.
func TestLLMContextAndAgentAbort(t *testing.T) {
	h := startServer(t, testConfig(t.TempDir()))
	ctx := context.Background()
	s, err := h.client.Create(ctx, "l.jsonl", "/w")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Navigate(ctx, twoTurns(t, s), client.NavigateOptions{Summarize: true}); err != nil {
		t.Fatal(err)
	}
	raw, err := s.Context(ctx)
	if err != nil {
		t.Fatal(err)
	}
	llm, err := s.LLMContext(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(llm.Messages) != len(raw.Messages) || len(llm.Messages) != 1 {
		t.Fatalf("%d llm messages, %d raw", len(llm.Messages), len(raw.Messages))
	}
	m := gjson.ParseBytes(llm.Messages[0])
	if m.Get("role").Str != "user" || !strings.Contains(m.Get("content.0.text").Str, "<summary>\n") || m.Get("summary").Exists() {
		t.Fatalf("llm message %s", llm.Messages[0])
	}

	for range 6 {
		if _, err := s.AppendMessages(ctx, userMsg("u", 150)); err != nil {
			t.Fatal(err)
		}
		if _, err := s.AfterTurn(ctx, assistantMsg("a", 150)); err != nil {
			t.Fatal(err)
		}
	}
	w, err := s.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var progress []string
	if _, err := s.Compact(ctx, "", func(ev client.Event) { progress = append(progress, ev.Kind) }); err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for len(kinds) < 3 {
		ev, err := w.Next()
		if err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, ev.Kind)
	}
	if strings.Join(kinds, ",") != "agent_abort,compaction_start,compaction_end" {
		t.Errorf("watched %v", kinds)
	}
	if strings.Join(progress, ",") != "compaction_start,compaction_end" {
		t.Errorf("the Compact caller's progress %v", progress)
	}
}
