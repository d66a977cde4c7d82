package server

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/pith-dev/pith/client"
	"github.com/pith-dev/pith/config"
	"github.com/tidwall/gjson"
)

func TestAppendAndContext(t *testing.T) {
	h := startServer(t, testConfig(t.TempDir()))
	ctx := context.Background()
	s, err := h.client.Create(ctx, "a.jsonl", "/w")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendMessages(ctx, userMsg("u1", 10)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AfterTurn(ctx, assistantMsg("a1", 10)); err != nil {
		t.Fatal(err)
	}
	written, err := s.AppendEntries(ctx,
		json.RawMessage(`{"type":"thinking_level_change","thinkingLevel":"high"}`),
		json.RawMessage(`{"type":"custom","customType":"note","data":{"k":1},"id":"ignored"}`),
		json.RawMessage(`{"type":"message","message":{"role":"user","content":"u2","timestamp":1}}`),
		json.RawMessage(`{"type":"custom_message","customType":"ext","content":"from an extension","display":true,"timestamp":"2026-01-01T00:00:00.000Z"}`),
	)
	if err != nil {
		t.Fatal(err)
	}
	if len(written) != 4 {
		t.Fatalf("wrote %d entries, want 4", len(written))
	}
	if id := gjson.GetBytes(written[1], "id").Str; id == "ignored" || id == "" {
		t.Errorf("the server must assign ids, got %q", id)
	}
	c, err := s.Context(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c.ThinkingLevel != "high" || c.Provider != "test" || c.ModelID != "m1" {
		t.Errorf("context settings: thinking %q model %s/%s", c.ThinkingLevel, c.Provider, c.ModelID)
	}
	var roles []string
	for _, m := range c.Messages {
		roles = append(roles, gjson.GetBytes(m, "role").Str)
	}
	if got := strings.Join(roles, ","); got != "user,assistant,user,custom" {
		t.Errorf("roles %s, want user,assistant,user,custom", got)
	}
	if c.Tokens <= 0 || c.LeafID != gjson.GetBytes(written[3], "id").Str {
		t.Errorf("tokens %d leaf %s", c.Tokens, c.LeafID)
	}

	bad := []struct {
		name string
		call func() error
	}{
		{"compaction entry", func() error {
			_, err := s.AppendEntries(ctx, json.RawMessage(`{"type":"compaction","summary":"x"}`))
			return err
		}},
		{"entry without type", func() error { _, err := s.AppendEntries(ctx, json.RawMessage(`{"a":1}`)); return err }},
		{"message without role", func() error { _, err := s.AppendMessages(ctx, json.RawMessage(`{"content":"x"}`)); return err }},
		{"not JSON", func() error { _, err := s.AppendMessages(ctx, json.RawMessage(`{`)); return err }},
		{"user message as a turn", func() error { _, err := s.AfterTurn(ctx, userMsg("x", 1)); return err }},
	}
	for _, b := range bad {
		if err := b.call(); !errors.Is(err, client.ErrInvalidArgument) {
			t.Errorf("%s: got %v, want invalid argument", b.name, err)
		}
	}
	unknown := &client.Session{}
	*unknown = *s
	unknown.ID = "nope"
	if _, err := unknown.Context(ctx); !errors.Is(err, client.ErrNotFound) {
		t.Errorf("unknown session: %v", err)
	}
}

func TestThresholdCompactionEventsAndReload(t *testing.T) {
	cfg := testConfig(t.TempDir())
	h := startServer(t, cfg)
	ctx := context.Background()
	s, err := h.client.Create(ctx, "t.jsonl", "/w")
	if err != nil {
		t.Fatal(err)
	}
	w, err := s.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()

	// Turns of ~300 tokens: the threshold (4000) is crossed by turn 14.
	var out *client.Outcome
	for i := 0; out == nil || out.Compaction == nil; i++ {
		if i > 40 {
			t.Fatal("no threshold compaction after 40 turns")
		}
		if _, err := s.AppendMessages(ctx, userMsg("u", 150)); err != nil {
			t.Fatal(err)
		}
		if out, err = s.AfterTurn(ctx, assistantMsg("a", 150)); err != nil {
			t.Fatal(err)
		}
		if out.Err != "" {
			t.Fatal(out.Err)
		}
	}
	if out.Compaction.Reason != "threshold" || out.Action != client.ActionContinue || out.Prompt == "" {
		t.Errorf("outcome %+v", out)
	}
	start, err := nextNotAppend(w)
	if err != nil {
		t.Fatal(err)
	}
	end, err := nextNotAppend(w)
	if err != nil {
		t.Fatal(err)
	}
	if start.Kind != "compaction_start" || end.Kind != "compaction_end" || end.EntryID != out.Compaction.EntryID || end.SessionID != s.ID {
		t.Errorf("events %+v, %+v", start, end)
	}

	// A reload reaches the open session's next compaction.
	next := cfg.Clone()
	next.Compaction.KeepRecentTokens = 200
	h.srv.ApplyConfig(config.Change{Old: cfg, New: next})
	for range 4 {
		if _, err := s.AppendMessages(ctx, userMsg("u", 150)); err != nil {
			t.Fatal(err)
		}
		if _, err := s.AfterTurn(ctx, assistantMsg("a", 150)); err != nil {
			t.Fatal(err)
		}
	}
	var progress []string
	res, err := s.Compact(ctx, "", func(ev client.Event) { progress = append(progress, ev.Kind) })
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(progress, ",") != "compaction_start,compaction_end" {
		t.Errorf("progress %v", progress)
	}
	if res.Reason != "manual" || res.TokensAfter >= out.Compaction.TokensAfter {
		t.Errorf("manual compaction with keepRecentTokens 200: %+v; the threshold one kept %d tokens", res, out.Compaction.TokensAfter)
	}
}

func TestNavigate(t *testing.T) {
	h := startServer(t, testConfig(t.TempDir()))
	ctx := context.Background()
	s, err := h.client.Create(ctx, "n.jsonl", "/w")
	if err != nil {
		t.Fatal(err)
	}
	first, err := s.AppendMessages(ctx, userMsg("first", 5))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AfterTurn(ctx, assistantMsg("answer", 5)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendMessages(ctx, userMsg("second", 5)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AfterTurn(ctx, assistantMsg("answer2", 5)); err != nil {
		t.Fatal(err)
	}
	target := gjson.GetBytes(first[0], "id").Str
	nav, err := s.Navigate(ctx, target, client.NavigateOptions{Summarize: true})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(nav.EditorText, "first ") || nav.SummaryEntry == nil || gjson.GetBytes(nav.SummaryEntry, "type").Str != "branch_summary" {
		t.Fatalf("navigation %+v", nav)
	}
	c, err := s.Context(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Messages) != 1 || gjson.GetBytes(c.Messages[0], "role").Str != "branchSummary" || c.LeafID != nav.NewLeafID {
		t.Fatalf("context after navigation: %d messages, leaf %s (want %s)", len(c.Messages), c.LeafID, nav.NewLeafID)
	}
	if _, err := s.Navigate(ctx, "no-such-entry", client.NavigateOptions{}); err == nil {
		t.Fatal("navigation to an unknown entry succeeded")
	}
}

func TestCloseEndsStreamsAndRefusesCalls(t *testing.T) {
	h := startServer(t, testConfig(t.TempDir()))
	ctx := context.Background()
	s, err := h.client.Create(ctx, "c.jsonl", "/w")
	if err != nil {
		t.Fatal(err)
	}
	w, err := s.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := h.srv.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Next(); err != io.EOF {
		t.Errorf("watch after Close: %v, want io.EOF", err)
	}
	if _, err := s.AppendMessages(ctx, userMsg("late", 1)); !errors.Is(err, client.ErrUnavailable) {
		t.Errorf("append after Close: %v, want ErrUnavailable", err)
	}
	if _, err := h.client.Open(ctx, "c.jsonl"); !errors.Is(err, client.ErrUnavailable) {
		t.Errorf("open after Close: %v, want ErrUnavailable", err)
	}
}

// nextNotAppend is the watcher's next event other than entries_appended
// (every append sends one).
func nextNotAppend(w *client.Watcher) (client.Event, error) {
	for {
		ev, err := w.Next()
		if err != nil || ev.Kind != string(EventEntriesAppended) {
			return ev, err
		}
	}
}
