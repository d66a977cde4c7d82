package compaction

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/pith-dev/pith/core/prompts"
	"github.com/pith-dev/pith/core/summary"
	"github.com/pith-dev/pith/core/tokens"
	"github.com/pith-dev/pith/core/transcript"
)

// splitPrep builds a preparation whose cut splits a turn, with history
// before it and a previous summary.
func splitPrep(t *testing.T, previous bool) *Preparation {
	t.Helper()
	b := &builder{}
	u0 := b.user(10)
	b.assistant(10, `c0:read:{"path":"/r.go"}`)
	b.result("c0", "read", 10)
	if previous {
		b.compaction(u0, "PREV", "")
	}
	b.user(10)
	b.assistant(10, `c1:edit:{"path":"/e.go"}`)
	b.result("c1", "edit", 300)
	b.assistant(100)
	prep, err := Prepare(b.path(t), Settings{ReserveTokens: 10000, KeepRecentTokens: 50})
	if err != nil {
		t.Fatal(err)
	}
	if !prep.Cut.IsSplitTurn || len(prep.TurnPrefixMessages) == 0 || len(prep.MessagesToSummarize) == 0 {
		t.Fatalf("fixture is not a split turn with history: %+v", prep.Cut)
	}
	return prep
}

func TestBuildSummaryRequests(t *testing.T) {
	prep := splitPrep(t, true)
	reqs, err := BuildSummaryRequests(prep, RequestOptions{
		ContextLines: []string{"ticket ABC-1", "keep the audit trail"},
		Instructions: "focus on tests",
		ShortSummary: true,
		Reasoning:    "low",
	})
	if err != nil {
		t.Fatal(err)
	}
	h := reqs.History
	conv := transcript.SerializeConversation(prep.MessagesToSummarize)
	want := "<conversation>\n" + conv + "\n</conversation>\n\n<previous-summary>\nPREV\n</previous-summary>\n\n" +
		"<additional-context>\n- ticket ABC-1\n- keep the audit trail\n</additional-context>\n\n" +
		prompts.Update + "\n\nAdditional focus: focus on tests"
	if h.Prompt != want {
		t.Fatalf("history prompt:\n%s\nwant:\n%s", h.Prompt, want)
	}
	if h.SystemPrompt != prompts.System || h.Purpose != summary.PurposeHistory || h.MaxTokens != 8000 || h.Reasoning != "low" {
		t.Fatalf("history request %+v", h)
	}
	src, ok := h.Source.(*summary.Transcript)
	if !ok || len(src.Messages) != len(prep.MessagesToSummarize) || src.PreviousSummary != "PREV" ||
		len(src.ContextLines) != 2 || src.Instructions != "focus on tests" || len(src.ReadFiles) != 1 || len(src.ModifiedFiles) != 1 {
		t.Fatalf("history source %+v", h.Source)
	}
	p := reqs.TurnPrefix
	if p == nil || p.MaxTokens != 5000 || p.Purpose != summary.PurposeTurnPrefix ||
		p.Prompt != "<conversation>\n"+transcript.SerializeConversation(prep.TurnPrefixMessages)+"\n</conversation>\n\n"+prompts.TurnPrefix {
		t.Fatalf("turn prefix request %+v", p)
	}
	if reqs.ShortMaxTokens != 512 {
		t.Fatalf("short cap %d", reqs.ShortMaxTokens)
	}

	t.Run("caps", func(t *testing.T) {
		for _, tt := range []struct {
			reserve, limit            int
			history, prefix, shortCap int
		}{
			{16384, 0, 13107, 8192, 512},
			{1000, 0, 800, 500, 200},
			{16384, 4096, 4096, 4096, 512},
			{16384, 100, 100, 100, 100},
		} {
			p := *prep
			p.Settings.ReserveTokens = tt.reserve
			r, err := BuildSummaryRequests(&p, RequestOptions{ModelOutputLimit: tt.limit, ShortSummary: true})
			if err != nil {
				t.Fatal(err)
			}
			if r.History.MaxTokens != tt.history || r.TurnPrefix.MaxTokens != tt.prefix || r.ShortMaxTokens != tt.shortCap {
				t.Errorf("reserve %d limit %d: caps %d/%d/%d, want %d/%d/%d", tt.reserve, tt.limit,
					r.History.MaxTokens, r.TurnPrefix.MaxTokens, r.ShortMaxTokens, tt.history, tt.prefix, tt.shortCap)
			}
		}
	})
	t.Run("a plugin prompt replaces the base prompt", func(t *testing.T) {
		r, err := BuildSummaryRequests(prep, RequestOptions{Prompt: "PLUGIN PROMPT"})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(r.History.Prompt, "</previous-summary>\n\nPLUGIN PROMPT") {
			t.Fatalf("prompt tail %q", r.History.Prompt[len(r.History.Prompt)-60:])
		}
	})
	t.Run("initial prompt without a previous summary", func(t *testing.T) {
		r, err := BuildSummaryRequests(splitPrep(t, false), RequestOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(r.History.Prompt, "</conversation>\n\n"+prompts.Initial) {
			t.Fatal("not the initial prompt")
		}
	})
	t.Run("input budget leaves out the middle and says so", func(t *testing.T) {
		b := &builder{}
		b.user(10)
		for range 30 {
			b.assistant(200)
		}
		b.user(1000)
		prep, err := Prepare(b.path(t), Settings{ReserveTokens: 1000, KeepRecentTokens: 500})
		if err != nil {
			t.Fatal(err)
		}
		r, err := BuildSummaryRequests(prep, RequestOptions{InputBudget: 3000})
		if err != nil {
			t.Fatal(err)
		}
		if r.OmittedMessages == 0 || !strings.Contains(r.History.Prompt, prompts.Omitted) {
			t.Fatalf("omitted %d", r.OmittedMessages)
		}
		if n := tokens.EstimateText(r.History.SystemPrompt) + tokens.EstimateText(r.History.Prompt); n > 3000 {
			t.Fatalf("request is ~%d tokens, budget 3000", n)
		}
		if _, err := BuildSummaryRequests(prep, RequestOptions{InputBudget: 500}); !errors.Is(err, transcript.ErrInputTooLarge) {
			t.Fatalf("err = %v", err)
		}
	})
}

// fake answers by purpose; it records the requests it saw.
type fake struct {
	mu   sync.Mutex
	seen []summary.Request
	fn   func(ctx context.Context, req summary.Request) (summary.Result, error)
}

func (f *fake) Summarize(ctx context.Context, req summary.Request) (summary.Result, error) {
	f.mu.Lock()
	f.seen = append(f.seen, req)
	f.mu.Unlock()
	return f.fn(ctx, req)
}

func answer(text string) func(context.Context, summary.Request) (summary.Result, error) {
	return func(_ context.Context, req summary.Request) (summary.Result, error) {
		return summary.Result{Text: text + ":" + string(req.Purpose), FinishReason: summary.FinishStop}, nil
	}
}

func TestGenerate(t *testing.T) {
	prep := splitPrep(t, false)
	f := &fake{fn: answer("S")}
	res, err := Generate(context.Background(), f, prep, RequestOptions{ShortSummary: true})
	if err != nil {
		t.Fatal(err)
	}
	want := "S:history" + TurnContextSeparator + "S:turn-prefix" +
		"\n\n<read-files>\n/r.go\n</read-files>\n\n<modified-files>\n/e.go\n</modified-files>"
	if res.Summary != want {
		t.Fatalf("summary %q", res.Summary)
	}
	if res.ShortSummary != "S:short" || res.FirstKeptEntryID != prep.FirstKeptEntryID || res.TokensBefore != prep.TokensBefore {
		t.Fatalf("result %+v", res)
	}
	if len(res.Details.ReadFiles) != 1 || len(res.Details.ModifiedFiles) != 1 {
		t.Fatalf("details %+v", res.Details)
	}
	if got := f.seen[len(f.seen)-1]; got.Purpose != summary.PurposeShort || !strings.Contains(got.Prompt, want) {
		t.Fatalf("short request %+v", got)
	}
}

func TestGenerateNoPriorHistory(t *testing.T) {
	for _, previous := range []bool{false, true} {
		b := &builder{}
		u := b.user(10)
		if previous {
			b.compaction(u, "PREV", "") // it kept the whole current turn
		}
		b.assistant(10, "c1:bash")
		b.result("c1", "bash", 300)
		b.assistant(100)
		prep, err := Prepare(b.path(t), Settings{ReserveTokens: 10000, KeepRecentTokens: 50})
		if err != nil {
			t.Fatal(err)
		}
		if len(prep.MessagesToSummarize) != 0 || !prep.Cut.IsSplitTurn {
			t.Fatalf("fixture: %d messages, split %v", len(prep.MessagesToSummarize), prep.Cut.IsSplitTurn)
		}
		f := &fake{fn: answer("S")}
		res, err := Generate(context.Background(), f, prep, RequestOptions{})
		if err != nil {
			t.Fatal(err)
		}
		head := NoPriorHistory
		if previous {
			head = "PREV" // pi would lose the previous summary here
		}
		if res.Summary != head+TurnContextSeparator+"S:turn-prefix" || len(f.seen) != 1 {
			t.Fatalf("previous %v: summary %q after %d calls", previous, res.Summary, len(f.seen))
		}
	}
}

func TestGenerateValidation(t *testing.T) {
	prep := splitPrep(t, false)
	tests := []struct {
		name string
		res  summary.Result
		msg  string
	}{
		{"empty", summary.Result{Text: "  \n", FinishReason: summary.FinishStop}, "empty"},
		{"cut off by the cap", summary.Result{Text: "## Goal\n- half", FinishReason: summary.FinishLength}, "cut off"},
		{"over the hard cap", summary.Result{Text: text(9000), FinishReason: summary.FinishStop}, "over the cap"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fake{fn: func(ctx context.Context, req summary.Request) (summary.Result, error) {
				if req.Purpose == summary.PurposeHistory {
					return tt.res, nil
				}
				return summary.Result{Text: "ok", FinishReason: summary.FinishStop}, nil
			}}
			res, err := Generate(context.Background(), f, prep, RequestOptions{})
			if !errors.Is(err, summary.ErrInvalidSummary) || !strings.Contains(err.Error(), tt.msg) || res != nil {
				t.Fatalf("res %v err %v", res, err)
			}
		})
	}
}

func TestGenerateFailureCancelsTheOtherCall(t *testing.T) {
	prep := splitPrep(t, false)
	boom := errors.New("provider down")
	f := &fake{fn: func(ctx context.Context, req summary.Request) (summary.Result, error) {
		if req.Purpose == summary.PurposeTurnPrefix {
			return summary.Result{}, boom
		}
		<-ctx.Done() // the history call only ends when cancelled
		return summary.Result{}, ctx.Err()
	}}
	_, err := Generate(context.Background(), f, prep, RequestOptions{})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want the turn-prefix failure", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	f = &fake{fn: func(ctx context.Context, req summary.Request) (summary.Result, error) {
		cancel()
		<-ctx.Done()
		return summary.Result{}, ctx.Err()
	}}
	if _, err := Generate(ctx, f, prep, RequestOptions{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want cancellation", err)
	}
}

func TestGenerateShortSummaryFailureIsNotFatal(t *testing.T) {
	prep := splitPrep(t, false)
	f := &fake{fn: func(ctx context.Context, req summary.Request) (summary.Result, error) {
		if req.Purpose == summary.PurposeShort {
			return summary.Result{Text: "", FinishReason: summary.FinishStop}, nil
		}
		return summary.Result{Text: "ok", FinishReason: summary.FinishStop}, nil
	}}
	res, err := Generate(context.Background(), f, prep, RequestOptions{ShortSummary: true})
	if err != nil || res.ShortSummary != "" || !errors.Is(res.ShortSummaryErr, summary.ErrInvalidSummary) {
		t.Fatalf("res %+v err %v", res, err)
	}
}
