package summarize

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/pith-dev/pith/core/summary"
)

// ErrNoCandidates is returned by a Chain that has nothing to try.
var ErrNoCandidates = errors.New("no summarizer candidates configured")

// Candidate is one entry of a Chain: a summarizer and the name that reports
// it in logs, errors and Result.Model (usually the model id).
type Candidate struct {
	Name       string
	Summarizer summary.Summarizer
}

// Chain tries its candidates in order (docs/behaviour.md §9.5). Each candidate gets up to
// MaxRetries retries with exponential backoff from BaseDelay (the server's
// retry-after wins when longer), but only for transient errors. A permanent
// error moves to the next candidate at once, and so does a transient one
// when the next wait would push the candidate's cumulative backoff past
// MaxBackoff. Cancellation of ctx stops everything and returns ctx.Err().
//
// A result cut off by the output cap (FinishLength) is returned as it is:
// rejecting it is the caller's business (docs/behaviour.md §7, validation).
//
// The zero values of BaseDelay, MaxBackoff, Sleep and Logger mean
// DefaultBaseDelay, DefaultMaxBackoff, SleepContext and no logging. A Chain
// is safe for concurrent use as long as its fields are not modified.
type Chain struct {
	Candidates []Candidate
	// MaxRetries is the number of retries after the first attempt, per
	// candidate (retry.maxRetries; 0 when retry.enabled is false).
	MaxRetries int
	BaseDelay  time.Duration
	MaxBackoff time.Duration
	Sleep      SleepFunc
	Logger     hclog.Logger
}

// Summarize implements Summarizer.
func (c *Chain) Summarize(ctx context.Context, req summary.Request) (summary.Result, error) {
	if len(c.Candidates) == 0 {
		return summary.Result{}, ErrNoCandidates
	}
	r := newRetrier(c.MaxRetries, c.BaseDelay, c.MaxBackoff, c.Sleep, c.Logger)
	var failures []CandidateFailure
	for i, cand := range c.Candidates {
		name := cand.Name
		if name == "" {
			name = fmt.Sprintf("candidate %d", i+1)
		}
		if cand.Summarizer == nil {
			failures = append(failures, CandidateFailure{Name: name, Err: errors.New("no summarizer")})
			continue
		}
		sum := cand.Summarizer
		res, err := r.run(ctx, name, func(ctx context.Context) (summary.Result, error) { return sum.Summarize(ctx, req) })
		if err == nil {
			if cand.Name != "" {
				res.Model = cand.Name
			}
			if len(failures) > 0 {
				r.log.Info("summarizer candidate answered after earlier ones failed", "summarizer", name, "failed", len(failures))
			}
			return res, nil
		}
		if ctxErr := ctx.Err(); ctxErr != nil {
			return summary.Result{}, ctxErr
		}
		failures = append(failures, CandidateFailure{Name: name, Err: err})
		if i+1 < len(c.Candidates) {
			r.log.Warn("summarizer candidate failed; trying the next one", "summarizer", name, "error", err)
		}
	}
	return summary.Result{}, &ChainError{Failures: failures}
}

// CandidateFailure is why one candidate of a Chain gave up.
type CandidateFailure struct {
	Name string
	Err  error
}

// ChainError is returned when every candidate of a Chain failed. It unwraps
// to each candidate's error, so errors.Is finds ErrMissingCredential or
// ErrTransient when any candidate failed that way.
type ChainError struct {
	Failures []CandidateFailure
}

func (e *ChainError) Error() string {
	var b strings.Builder
	if len(e.Failures) == 1 {
		b.WriteString("summarizer failed: ")
	} else {
		fmt.Fprintf(&b, "all %d summarizer candidates failed: ", len(e.Failures))
	}
	for i, f := range e.Failures {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(f.Name + ": " + f.Err.Error())
	}
	return b.String()
}

func (e *ChainError) Unwrap() []error {
	errs := make([]error, len(e.Failures))
	for i, f := range e.Failures {
		errs[i] = f.Err
	}
	return errs
}

// Converse implements summary.ToolCaller: the candidates that can call tools are
// tried in order with the same retry rules as Summarize; the others are
// passed over.
func (c *Chain) Converse(ctx context.Context, req summary.ConverseRequest) (summary.ConverseResult, error) {
	if !c.CallsTools() {
		return summary.ConverseResult{}, summary.ErrNoToolCalling
	}
	r := newRetrier(c.MaxRetries, c.BaseDelay, c.MaxBackoff, c.Sleep, c.Logger)
	var failures []CandidateFailure
	for i, cand := range c.Candidates {
		tc, ok := cand.Summarizer.(summary.ToolCaller)
		if !ok {
			continue
		}
		name := cand.Name
		if name == "" {
			name = fmt.Sprintf("candidate %d", i+1)
		}
		res, err := retry(ctx, r, name, func(ctx context.Context) (summary.ConverseResult, error) { return tc.Converse(ctx, req) })
		if err == nil {
			if cand.Name != "" {
				res.Model = cand.Name
			}
			return res, nil
		}
		if ctxErr := ctx.Err(); ctxErr != nil {
			return summary.ConverseResult{}, ctxErr
		}
		failures = append(failures, CandidateFailure{Name: name, Err: err})
		r.log.Warn("tool-calling candidate failed", "summarizer", name, "error", err)
	}
	return summary.ConverseResult{}, &ChainError{Failures: failures}
}

// CallsTools reports whether any candidate can call tools.
func (c *Chain) CallsTools() bool {
	for _, cand := range c.Candidates {
		if _, ok := cand.Summarizer.(summary.ToolCaller); ok {
			return true
		}
	}
	return false
}
