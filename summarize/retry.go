package summarize

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/pith-dev/pith/core/summary"
)

// Defaults of docs/behaviour.md §9.5 and §14 (retry.baseDelayMs, the 30 s move-on point).
const (
	DefaultBaseDelay  = 2 * time.Second
	DefaultMaxBackoff = 30 * time.Second
)

// SleepFunc waits d or until ctx is done, returning ctx.Err() in that case.
// Tests inject a fake one so no real backoff happens.
type SleepFunc func(ctx context.Context, d time.Duration) error

// SleepContext is the real SleepFunc.
func SleepContext(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// retrier runs one summarizer with bounded retries on transient errors. It
// is shared by Chain (per candidate) and the remote endpoint.
type retrier struct {
	maxRetries int
	baseDelay  time.Duration
	maxBackoff time.Duration
	sleep      SleepFunc
	log        hclog.Logger
}

func newRetrier(maxRetries int, baseDelay, maxBackoff time.Duration, sleep SleepFunc, log hclog.Logger) retrier {
	if maxRetries < 0 {
		maxRetries = 0
	}
	if baseDelay <= 0 {
		baseDelay = DefaultBaseDelay
	}
	if maxBackoff <= 0 {
		maxBackoff = DefaultMaxBackoff
	}
	if sleep == nil {
		sleep = SleepContext
	}
	if log == nil {
		log = hclog.NewNullLogger()
	}
	return retrier{maxRetries: maxRetries, baseDelay: baseDelay, maxBackoff: maxBackoff, sleep: sleep, log: log}
}

// delay is the wait before retry number n (0-based): exponential from the
// base, or the server's retry-after when that is longer.
func (r retrier) delay(n int, retryAfter time.Duration) time.Duration {
	d := r.baseDelay
	for i := 0; i < n && d < r.maxBackoff; i++ {
		d *= 2
	}
	if retryAfter > d {
		d = retryAfter
	}
	return d
}

// run calls fn until it succeeds, fails permanently, runs out of retries, or
// the next wait would push the cumulative backoff past maxBackoff. A done
// ctx stops it at once and its error is returned as is.
func (r retrier) run(ctx context.Context, name string, fn func(context.Context) (summary.Result, error)) (summary.Result, error) {
	return retry(ctx, r, name, fn)
}

// retry is retrier.run for any kind of answer (a summary, a tool turn).
func retry[T any](ctx context.Context, r retrier, name string, fn func(context.Context) (T, error)) (T, error) {
	var waited time.Duration
	var zero T
	for attempt := 0; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return zero, err
		}
		res, err := fn(ctx)
		if err == nil {
			return res, nil
		}
		if ctxErr := ctx.Err(); ctxErr != nil {
			return zero, ctxErr
		}
		transient, retryAfter := Classify(err)
		if !transient {
			return zero, err
		}
		if attempt >= r.maxRetries {
			if r.maxRetries == 0 {
				return zero, err
			}
			return zero, fmt.Errorf("%w (gave up after %d attempts)", err, attempt+1)
		}
		d := r.delay(attempt, retryAfter)
		if waited+d > r.maxBackoff {
			r.log.Warn("backoff budget exhausted", "summarizer", name, "attempts", attempt+1,
				"waited", waited, "next_delay", d, "max_backoff", r.maxBackoff, "error", err)
			return zero, fmt.Errorf("%w (gave up after %d attempts: next wait %s would pass the %s backoff budget)",
				err, attempt+1, d, r.maxBackoff)
		}
		r.log.Info("retrying", "summarizer", name, "attempt", attempt+1, "delay", d, "error", err)
		if err := r.sleep(ctx, d); err != nil {
			if ctxErr := ctx.Err(); ctxErr != nil {
				return zero, ctxErr
			}
			return zero, err
		}
		waited += d
	}
}
