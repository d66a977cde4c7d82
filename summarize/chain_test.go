package summarize

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/pith-dev/pith/core/summary"
	"github.com/pith-dev/pith/summarize/internal/httpfake"
)

// scripted is a Summarizer that answers from a list of outcomes (the last
// repeats) and counts its calls.
type scripted struct {
	mu       sync.Mutex
	outcomes []outcome
	calls    int
}

type outcome struct {
	res summary.Result
	err error
}

func (s *scripted) Summarize(ctx context.Context, _ summary.Request) (summary.Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.outcomes[min(s.calls, len(s.outcomes)-1)]
	s.calls++
	return o.res, o.err
}

func (s *scripted) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

func ok(text string) outcome {
	return outcome{res: summary.Result{Text: text, FinishReason: summary.FinishStop, Model: "raw"}}
}

func transientErr(after time.Duration) outcome {
	return outcome{err: &TransientError{Err: errors.New("HTTP 529 overloaded"), RetryAfter: after}}
}

func permanentErr(msg string) outcome { return outcome{err: errors.New(msg)} }

func TestChain(t *testing.T) {
	const base = time.Second
	tests := []struct {
		name       string
		maxRetries int
		candidates [][]outcome // per candidate, its script
		wantText   string
		wantModel  string
		wantErr    []string // substrings when it must fail
		wantCalls  []int
		wantSleeps []time.Duration
	}{
		{
			name:       "first answers",
			maxRetries: 3,
			candidates: [][]outcome{{ok("a")}, {ok("b")}},
			wantText:   "a", wantModel: "c1",
			wantCalls: []int{1, 0},
		},
		{
			name:       "transient errors retried with exponential backoff",
			maxRetries: 3,
			candidates: [][]outcome{{transientErr(0), transientErr(0), ok("a")}, {ok("b")}},
			wantText:   "a", wantModel: "c1",
			wantCalls:  []int{3, 0},
			wantSleeps: []time.Duration{base, 2 * base},
		},
		{
			name:       "retry-after longer than the backoff wins",
			maxRetries: 3,
			candidates: [][]outcome{{transientErr(5 * time.Second), transientErr(time.Second), ok("a")}},
			wantText:   "a", wantModel: "c1",
			wantCalls:  []int{3},
			wantSleeps: []time.Duration{5 * time.Second, 2 * base},
		},
		{
			name:       "permanent error skips to the next candidate at once",
			maxRetries: 3,
			candidates: [][]outcome{{permanentErr("HTTP 400 bad model")}, {ok("b")}},
			wantText:   "b", wantModel: "c2",
			wantCalls: []int{1, 1},
		},
		{
			name:       "retries exhausted: next candidate",
			maxRetries: 2,
			candidates: [][]outcome{{transientErr(0)}, {ok("b")}},
			wantText:   "b", wantModel: "c2",
			wantCalls:  []int{3, 1},
			wantSleeps: []time.Duration{base, 2 * base},
		},
		{
			name:       "no retries configured",
			maxRetries: 0,
			candidates: [][]outcome{{transientErr(0)}, {ok("b")}},
			wantText:   "b", wantModel: "c2",
			wantCalls: []int{1, 1},
		},
		{
			name:       "past 30 s of backoff: next candidate",
			maxRetries: 10,
			// 1+2+4+8 = 15 s waited; the next 16 s would make 31 s.
			candidates: [][]outcome{{transientErr(0)}, {ok("b")}},
			wantText:   "b", wantModel: "c2",
			wantCalls:  []int{5, 1},
			wantSleeps: []time.Duration{base, 2 * base, 4 * base, 8 * base},
		},
		{
			name:       "retry-after beyond the budget: next candidate without waiting",
			maxRetries: 3,
			candidates: [][]outcome{{transientErr(45 * time.Second)}, {ok("b")}},
			wantText:   "b", wantModel: "c2",
			wantCalls: []int{1, 1},
		},
		{
			name:       "a cut-off result is returned, not retried",
			maxRetries: 3,
			candidates: [][]outcome{{{res: summary.Result{Text: "trunc", FinishReason: summary.FinishLength}}}, {ok("b")}},
			wantText:   "trunc", wantModel: "c1",
			wantCalls: []int{1, 0},
		},
		{
			name:       "all fail",
			maxRetries: 1,
			candidates: [][]outcome{{permanentErr("HTTP 401 bad key")}, {transientErr(0)}},
			wantErr:    []string{"all 2 summarizer candidates failed", "c1: HTTP 401 bad key", "c2: HTTP 529 overloaded (gave up after 2 attempts)"},
			wantCalls:  []int{1, 2},
			wantSleeps: []time.Duration{base},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var sleeps httpfake.SleepRecorder
			chain := &Chain{MaxRetries: tt.maxRetries, BaseDelay: base, Sleep: sleeps.Sleep}
			var scripts []*scripted
			for i, outs := range tt.candidates {
				s := &scripted{outcomes: outs}
				scripts = append(scripts, s)
				chain.Candidates = append(chain.Candidates, Candidate{Name: fmt.Sprintf("c%d", i+1), Summarizer: s})
			}
			res, err := chain.Summarize(context.Background(), testRequest)
			if len(tt.wantErr) > 0 {
				if err == nil {
					t.Fatalf("want an error, got %+v", res)
				}
				var ce *ChainError
				if !errors.As(err, &ce) || len(ce.Failures) != len(tt.candidates) {
					t.Errorf("err = %#v, want a ChainError with one failure per candidate", err)
				}
				for _, w := range tt.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not mention %q", err, w)
					}
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				if res.Text != tt.wantText || res.Model != tt.wantModel {
					t.Errorf("result = %+v, want text %q from %s", res, tt.wantText, tt.wantModel)
				}
			}
			for i, s := range scripts {
				if s.Calls() != tt.wantCalls[i] {
					t.Errorf("candidate %d called %d times, want %d", i+1, s.Calls(), tt.wantCalls[i])
				}
			}
			if got := sleeps.Delays(); !slices.Equal(got, tt.wantSleeps) {
				t.Errorf("backoff = %v, want %v", got, tt.wantSleeps)
			}
		})
	}
}

func TestChainDefaults(t *testing.T) {
	var sleeps httpfake.SleepRecorder
	first := &scripted{outcomes: []outcome{transientErr(0)}}
	second := &scripted{outcomes: []outcome{ok("b")}}
	chain := &Chain{
		Candidates: []Candidate{{Name: "c1", Summarizer: first}, {Name: "c2", Summarizer: second}},
		MaxRetries: 100,
		Sleep:      sleeps.Sleep,
	}
	if _, err := chain.Summarize(context.Background(), testRequest); err != nil {
		t.Fatal(err)
	}
	// 2+4+8+16 = 30 s is within the default 30 s budget; the next 32 s is not.
	want := []time.Duration{2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second}
	if got := sleeps.Delays(); !slices.Equal(got, want) {
		t.Errorf("backoff = %v, want %v", got, want)
	}
}

func TestChainCancellation(t *testing.T) {
	t.Run("during a candidate call", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		first := summary.Func(func(context.Context, summary.Request) (summary.Result, error) {
			cancel()
			return summary.Result{}, &TransientError{Err: errors.New("connection reset")}
		})
		second := &scripted{outcomes: []outcome{ok("b")}}
		var sleeps httpfake.SleepRecorder
		chain := &Chain{
			Candidates: []Candidate{{Name: "c1", Summarizer: first}, {Name: "c2", Summarizer: second}},
			MaxRetries: 3, Sleep: sleeps.Sleep,
		}
		_, err := chain.Summarize(ctx, testRequest)
		if err != context.Canceled {
			t.Fatalf("err = %v, want context.Canceled itself", err)
		}
		if second.Calls() != 0 || len(sleeps.Delays()) != 0 {
			t.Errorf("kept going after cancellation: %d calls, sleeps %v", second.Calls(), sleeps.Delays())
		}
	})
	t.Run("during backoff with the real sleep", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		sleeping := make(chan struct{})
		first := &scripted{outcomes: []outcome{transientErr(0)}}
		second := &scripted{outcomes: []outcome{ok("b")}}
		chain := &Chain{
			Candidates: []Candidate{{Name: "c1", Summarizer: first}, {Name: "c2", Summarizer: second}},
			MaxRetries: 3,
			BaseDelay:  time.Hour,
			MaxBackoff: 10 * time.Hour,
			Sleep: func(ctx context.Context, d time.Duration) error {
				close(sleeping)
				return SleepContext(ctx, d)
			},
		}
		go func() {
			<-sleeping
			cancel()
		}()
		_, err := chain.Summarize(ctx, testRequest)
		if err != context.Canceled {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		if first.Calls() != 1 || second.Calls() != 0 {
			t.Errorf("calls = %d, %d; want 1, 0", first.Calls(), second.Calls())
		}
	})
	t.Run("already cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		first := &scripted{outcomes: []outcome{ok("a")}}
		chain := &Chain{Candidates: []Candidate{{Name: "c1", Summarizer: first}}}
		if _, err := chain.Summarize(ctx, testRequest); err != context.Canceled {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		if first.Calls() != 0 {
			t.Error("called a candidate with a cancelled context")
		}
	})
}

func TestChainEmptyAndNil(t *testing.T) {
	if _, err := (&Chain{}).Summarize(context.Background(), testRequest); !errors.Is(err, ErrNoCandidates) {
		t.Errorf("empty chain: err = %v", err)
	}
	chain := &Chain{Candidates: []Candidate{{Name: "broken"}, {Summarizer: &scripted{outcomes: []outcome{ok("b")}}}}}
	res, err := chain.Summarize(context.Background(), testRequest)
	if err != nil || res.Text != "b" || res.Model != "raw" {
		t.Errorf("nil candidate then an unnamed one: (%+v, %v)", res, err)
	}
}

func TestChainErrorUnwraps(t *testing.T) {
	chain := &Chain{Candidates: []Candidate{
		{Name: "a", Summarizer: summary.Func(func(context.Context, summary.Request) (summary.Result, error) {
			return summary.Result{}, fmt.Errorf("x: %w", ErrMissingCredential)
		})},
	}}
	_, err := chain.Summarize(context.Background(), testRequest)
	if !errors.Is(err, ErrMissingCredential) {
		t.Errorf("errors.Is(%v, ErrMissingCredential) = false", err)
	}
	if err.Error() != "summarizer failed: a: x: missing credential" {
		t.Errorf("one-candidate message = %q", err)
	}
}

func TestChainLogsRetries(t *testing.T) {
	var buf bytes.Buffer
	log := hclog.New(&hclog.LoggerOptions{Output: &buf, Level: hclog.Info})
	var sleeps httpfake.SleepRecorder
	chain := &Chain{
		Candidates: []Candidate{
			{Name: "flaky", Summarizer: &scripted{outcomes: []outcome{transientErr(0), permanentErr("HTTP 400")}}},
			{Name: "steady", Summarizer: &scripted{outcomes: []outcome{ok("b")}}},
		},
		MaxRetries: 2, BaseDelay: time.Second, Sleep: sleeps.Sleep, Logger: log,
	}
	if _, err := chain.Summarize(context.Background(), testRequest); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"retrying: summarizer=flaky attempt=1 delay=1s", "trying the next one: summarizer=flaky"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
}
