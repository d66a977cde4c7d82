package summarize

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/pith-dev/pith/core/summary"
	"github.com/pith-dev/pith/internal/redact"
)

// Remote endpoint defaults (docs/behaviour.md §7, remote endpoint mode).
const (
	DefaultRemoteTimeout    = 2 * time.Minute
	DefaultRemoteAuthHeader = "Authorization"
	// maxRemoteResponse bounds what is read of an answer; a summary is
	// tokens, not megabytes.
	maxRemoteResponse = 16 << 20
)

// RemoteOptions configures the remote endpoint summarizer.
type RemoteOptions struct {
	// URL receives the POST (compaction.remoteEndpoint; required).
	URL string
	// Timeout bounds one attempt; default DefaultRemoteTimeout.
	Timeout time.Duration
	// AuthEnv names the environment variable holding the auth header's
	// value, read at each call. Empty: no auth header.
	AuthEnv string
	// AuthHeader is the header that carries it; default Authorization.
	AuthHeader string
	// MaxRetries bounds retries after the first attempt on transient errors
	// (429, 5xx, connection failures, timeouts); 0 means one attempt
	// (compaction.remoteEndpoint.retries, default 2 in the configuration).
	MaxRetries int
	// BaseDelay, MaxBackoff and Sleep shape the backoff as in Chain.
	BaseDelay  time.Duration
	MaxBackoff time.Duration
	Sleep      SleepFunc
	// Fallback answers when the endpoint fails for any reason but an abort.
	Fallback summary.Summarizer
	// HTTPClient is the client to send with (its Timeout is replaced by
	// Timeout); nil uses a fresh one.
	HTTPClient *http.Client
	Logger     hclog.Logger
}

type remoteSummarizer struct {
	url        string
	name       string // scheme://host/path, for logs and Result.Model
	authEnv    string
	authHeader string
	timeout    time.Duration
	client     *http.Client
	retry      retrier
	fallback   summary.Summarizer
	log        hclog.Logger
}

// remoteRequest and remoteResponse are the endpoint's wire format.
type remoteRequest struct {
	SystemPrompt string `json:"systemPrompt"`
	Prompt       string `json:"prompt"`
}

type remoteResponse struct {
	Summary *string `json:"summary"`
}

// NewRemote returns the remote endpoint summarizer of docs/behaviour.md §7: it POSTs
// {"systemPrompt", "prompt"} as JSON and expects {"summary"}, retrying
// transient failures a bounded number of times, and falls back to
// opts.Fallback when the endpoint cannot answer.
func NewRemote(opts RemoteOptions) (summary.Summarizer, error) {
	u, err := url.Parse(opts.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("remote summarizer: invalid endpoint URL %q: want http(s)://host/path", redact.URL(opts.URL, nil))
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultRemoteTimeout
	}
	header := opts.AuthHeader
	if header == "" {
		header = DefaultRemoteAuthHeader
	}
	log := opts.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	name := "remote:" + u.Scheme + "://" + u.Host + u.Path
	return &remoteSummarizer{
		url:        opts.URL,
		name:       name,
		authEnv:    opts.AuthEnv,
		authHeader: header,
		timeout:    timeout,
		client:     HTTPClientWithTimeout(opts.HTTPClient, timeout),
		retry:      newRetrier(opts.MaxRetries, opts.BaseDelay, opts.MaxBackoff, opts.Sleep, log),
		fallback:   opts.Fallback,
		log:        log,
	}, nil
}

func (s *remoteSummarizer) Summarize(ctx context.Context, req summary.Request) (summary.Result, error) {
	res, err := s.summarizeRemote(ctx, req)
	if err == nil {
		return res, nil
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return summary.Result{}, ctxErr
	}
	if s.fallback == nil {
		return summary.Result{}, err
	}
	s.log.Warn("remote summarizer failed; using the local fallback", "endpoint", s.name, "error", err)
	res, ferr := s.fallback.Summarize(ctx, req)
	if ferr != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return summary.Result{}, ctxErr
		}
		return summary.Result{}, fmt.Errorf("%w; the fallback failed too: %w", err, ferr)
	}
	return res, nil
}

// summarizeRemote is the endpoint alone, with its retries.
func (s *remoteSummarizer) summarizeRemote(ctx context.Context, req summary.Request) (summary.Result, error) {
	var auth string
	if s.authEnv != "" {
		auth = os.Getenv(s.authEnv)
		if auth == "" {
			return summary.Result{}, fmt.Errorf("remote summarizer: environment variable %s is not set: %w", s.authEnv, ErrMissingCredential)
		}
	}
	// The prompt is full of <conversation>-style tags: keep them readable
	// in the endpoint's logs instead of \u003c escapes.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(remoteRequest{SystemPrompt: req.SystemPrompt, Prompt: req.Prompt}); err != nil {
		return summary.Result{}, fmt.Errorf("remote summarizer: encode request: %w", err)
	}
	body := buf.Bytes()
	return s.retry.run(ctx, s.name, func(ctx context.Context) (summary.Result, error) {
		return s.post(ctx, body, auth)
	})
}

// post makes one attempt.
func (s *remoteSummarizer) post(ctx context.Context, body []byte, auth string) (summary.Result, error) {
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader(body))
	if err != nil {
		return summary.Result{}, fmt.Errorf("remote summarizer: build request: %w", err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "application/json")
	if auth != "" {
		hreq.Header.Set(s.authHeader, auth)
	}
	resp, err := s.client.Do(hreq)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return summary.Result{}, ctxErr
		}
		// The auth value lives in a header and never appears here, but a
		// token could sit in the URL's query: the error names the URL bare.
		var ue *url.Error
		if errors.As(err, &ue) {
			ue.URL = redact.URL(ue.URL, nil)
		}
		return summary.Result{}, TransportError("remote summarizer", s.timeout, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxRemoteResponse+1))
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return summary.Result{}, ctxErr
		}
		return summary.Result{}, TransportError("remote summarizer: read response", s.timeout, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return summary.Result{}, MarkTransient(&APIError{
			Provider:   "remote summarizer",
			StatusCode: resp.StatusCode,
			Message:    Excerpt(data, auth),
			RetryAfter: ParseRetryAfter(resp.Header, time.Now()),
		})
	}
	if len(data) > maxRemoteResponse {
		return summary.Result{}, fmt.Errorf("remote summarizer: response larger than %d bytes: %w", maxRemoteResponse, ErrBadResponse)
	}
	var out remoteResponse
	if err := json.Unmarshal(data, &out); err != nil {
		return summary.Result{}, fmt.Errorf("remote summarizer: response is not the expected JSON object (%v): %q: %w",
			err, Excerpt(data, auth), ErrBadResponse)
	}
	if out.Summary == nil {
		return summary.Result{}, fmt.Errorf("remote summarizer: response has no \"summary\" field: %w", ErrBadResponse)
	}
	if strings.TrimSpace(*out.Summary) == "" {
		return summary.Result{}, fmt.Errorf("remote summarizer: response has an empty \"summary\": %w", ErrEmptySummary)
	}
	return summary.Result{Text: *out.Summary, FinishReason: summary.FinishStop, Model: s.name}, nil
}
