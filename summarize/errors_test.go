package summarize

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestClassify(t *testing.T) {
	tests := []struct {
		name          string
		err           error
		wantTransient bool
		wantAfter     time.Duration
	}{
		{"nil", nil, false, 0},
		{"cancelled", context.Canceled, false, 0},
		{"cancelled, wrapped", fmt.Errorf("call: %w", context.Canceled), false, 0},
		{"deadline (per-request timeout)", context.DeadlineExceeded, true, 0},
		{"TransientError keeps its hint", &TransientError{Err: errors.New("x"), RetryAfter: 3 * time.Second}, true, 3 * time.Second},
		{"bare ErrTransient", fmt.Errorf("x: %w", ErrTransient), true, 0},
		{"APIError 429 keeps its hint", &APIError{StatusCode: 429, RetryAfter: 12 * time.Second}, true, 12 * time.Second},
		{"APIError 429 wrapped", fmt.Errorf("call: %w", &APIError{StatusCode: 429, RetryAfter: 2 * time.Second}), true, 2 * time.Second},
		{"APIError quota", &APIError{StatusCode: 429, Type: "insufficient_quota"}, false, 0},
		{"APIError billing", &APIError{StatusCode: 400, Type: "billing_error"}, false, 0},
		{"APIError 408", &APIError{StatusCode: 408}, true, 0},
		{"APIError 404", &APIError{StatusCode: 404}, false, 0},
		{"APIError 500", &APIError{StatusCode: 500}, true, 0},
		{"APIError 529", &APIError{StatusCode: 529}, true, 0},
		{"APIError overloaded type", &APIError{StatusCode: 400, Type: "overloaded_error"}, true, 0},
		{"APIError 422", &APIError{StatusCode: 422}, false, 0},
		{"connection refused", &url.Error{Op: "Post", URL: "http://x", Err: &net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}}, true, 0},
		{"connection reset", &url.Error{Op: "Post", URL: "http://x", Err: &net.OpError{Op: "read", Err: os.NewSyscallError("read", syscall.ECONNRESET)}}, true, 0},
		{"server closed the connection", &url.Error{Op: "Post", URL: "http://x", Err: io.EOF}, true, 0},
		{"truncated body", fmt.Errorf("read: %w", io.ErrUnexpectedEOF), true, 0},
		{"bare EOF is not a transport failure", io.EOF, false, 0},
		{"unknown host", &url.Error{Op: "Post", URL: "http://x", Err: &net.OpError{Op: "dial", Err: &net.DNSError{Err: "no such host", Name: "x", IsNotFound: true}}}, false, 0},
		{"missing credential", fmt.Errorf("x: %w", ErrMissingCredential), false, 0},
		{"bad response", fmt.Errorf("x: %w", ErrBadResponse), false, 0},
		{"plain error", errors.New("boom"), false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			transient, after := Classify(tt.err)
			if transient != tt.wantTransient || after != tt.wantAfter {
				t.Errorf("Classify = (%v, %v), want (%v, %v)", transient, after, tt.wantTransient, tt.wantAfter)
			}
		})
	}
}

func TestMarkTransient(t *testing.T) {
	already := &TransientError{Err: errors.New("x"), RetryAfter: time.Second}
	tests := []struct {
		name      string
		err       error
		wantSame  bool // returned unchanged
		wantAfter time.Duration
	}{
		{"nil", nil, true, 0},
		{"permanent", &APIError{StatusCode: 400}, true, 0},
		{"already marked", already, true, time.Second},
		{"transient with a hint", &APIError{StatusCode: 429, RetryAfter: 5 * time.Second}, false, 5 * time.Second},
		{"transport", &url.Error{Op: "Post", URL: "http://x", Err: io.EOF}, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := MarkTransient(tt.err)
			if tt.wantSame {
				if got != tt.err {
					t.Fatalf("MarkTransient changed %v into %v", tt.err, got)
				}
				return
			}
			var te *TransientError
			if !errors.As(got, &te) || !errors.Is(got, ErrTransient) || !errors.Is(got, tt.err) {
				t.Fatalf("MarkTransient(%v) = %#v, want a TransientError wrapping it", tt.err, got)
			}
			if te.RetryAfter != tt.wantAfter {
				t.Errorf("RetryAfter = %v, want %v", te.RetryAfter, tt.wantAfter)
			}
			if got.Error() != tt.err.Error() {
				t.Errorf("Error() = %q, want the wrapped text %q", got, tt.err)
			}
		})
	}
}

func TestTransportError(t *testing.T) {
	tests := []struct {
		name          string
		err           error
		wantLine      string
		wantTransient bool
	}{
		{"timeout", context.DeadlineExceeded, "p: no answer within the 1m0s request timeout: context deadline exceeded", true},
		{"closed", &url.Error{Op: "Post", URL: "http://x", Err: io.EOF},
			`p: the server closed the connection without answering: Post "http://x": EOF`, true},
		{"other", errors.New("boom"), "p: boom", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := TransportError("p", time.Minute, tt.err)
			if err.Error() != tt.wantLine {
				t.Errorf("line = %q, want %q", err, tt.wantLine)
			}
			if !errors.Is(err, tt.err) {
				t.Errorf("%v does not wrap %v", err, tt.err)
			}
			if got := errors.Is(err, ErrTransient); got != tt.wantTransient {
				t.Errorf("transient = %v, want %v", got, tt.wantTransient)
			}
		})
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		headers map[string]string
		want    time.Duration
	}{
		{"none", nil, 0},
		{"seconds", map[string]string{"Retry-After": "30"}, 30 * time.Second},
		{"fractional seconds", map[string]string{"Retry-After": "1.5"}, 1500 * time.Millisecond},
		{"HTTP date", map[string]string{"Retry-After": now.Add(90 * time.Second).Format(http.TimeFormat)}, 90 * time.Second},
		{"HTTP date in the past", map[string]string{"Retry-After": now.Add(-time.Minute).Format(http.TimeFormat)}, 0},
		{"milliseconds win", map[string]string{"Retry-After": "30", "Retry-After-Ms": "1200"}, 1200 * time.Millisecond},
		{"bad milliseconds fall back", map[string]string{"Retry-After": "4", "Retry-After-Ms": "soon"}, 4 * time.Second},
		{"negative", map[string]string{"Retry-After": "-3"}, 0},
		{"garbage", map[string]string{"Retry-After": "later"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tt.headers {
				h.Set(k, v)
			}
			if got := ParseRetryAfter(h, now); got != tt.want {
				t.Errorf("ParseRetryAfter = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestExcerpt(t *testing.T) {
	long := strings.Repeat("é", 300)
	tests := []struct {
		name, in, want string
	}{
		{"flattened", "line one\n\tline two\r\n", "line one line two"},
		{"redacted", "bad key " + testKey + " given", "bad key [redacted] given"},
		{"cut on a rune boundary", long, strings.Repeat("é", excerptLimit/2) + "…"},
		{"invalid UTF-8", "a\xffb", "a\uFFFDb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Excerpt([]byte(tt.in), testKey); got != tt.want {
				t.Errorf("Excerpt = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestAPIErrorLine(t *testing.T) {
	e := &APIError{Provider: "anthropic summarizer", Model: "claude-sonnet-4-5", StatusCode: 529, Type: "overloaded_error", Message: "Overloaded"}
	if got, want := e.Error(), "anthropic summarizer: claude-sonnet-4-5: HTTP 529 (overloaded_error): Overloaded"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	e = &APIError{Provider: "remote summarizer", StatusCode: 404}
	if got, want := e.Error(), "remote summarizer: HTTP 404 Not Found"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}
