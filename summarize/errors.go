package summarize

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"
)

// Sentinel errors callers branch on.
var (
	// ErrMissingCredential means the environment variable that should hold a
	// provider's key or an endpoint's auth value is unset or empty. No request
	// was sent.
	ErrMissingCredential = errors.New("missing credential")
	// ErrBadResponse means the server answered 2xx with a body that is not the
	// expected JSON, or that lacks the text.
	ErrBadResponse = errors.New("malformed summarizer response")
	// ErrEmptySummary means the server answered well-formed JSON without any
	// summary text.
	ErrEmptySummary = errors.New("empty summary")
)

// APIError is a provider's non-2xx answer reduced to what is safe to show a
// user: the status, the provider's error type and a short message. It never
// holds request headers, so a credential cannot leak through it.
type APIError struct {
	Provider   string // "openai summarizer", "anthropic summarizer", "remote summarizer"
	Model      string // the model asked, when there is one
	StatusCode int
	Type       string // provider error type or code, e.g. "rate_limit_error"
	Message    string // short, single line, credential-free
	RetryAfter time.Duration
}

func (e *APIError) Error() string {
	var b strings.Builder
	b.WriteString(e.Provider + ": ")
	if e.Model != "" {
		b.WriteString(e.Model + ": ")
	}
	fmt.Fprintf(&b, "HTTP %d", e.StatusCode)
	if t := http.StatusText(e.StatusCode); t != "" {
		b.WriteString(" " + t)
	}
	if e.Type != "" {
		b.WriteString(" (" + e.Type + ")")
	}
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	return b.String()
}

// Classify reports whether err is worth retrying and the wait the server
// asked for (0 when it gave none). It knows no provider's error format:
// providers turn their error answers into *APIError or *TransientError at
// their boundary (see summarize/llm).
//
// Transient: rate limits (429), overload (529 or an "overloaded_error"
// body), 408/409 and every 5xx, refused or reset connections, a connection
// closed mid-answer, and timeouts. Permanent: every other 4xx, malformed
// answers, missing credentials, and cancellation. A context.DeadlineExceeded
// counts as a timeout here: providers already turn the caller's own expired
// context into an abort before classifying, so one that reaches Classify came
// from a per-request timeout.
func Classify(err error) (transient bool, retryAfter time.Duration) {
	if err == nil || errors.Is(err, context.Canceled) {
		return false, 0
	}
	var te *TransientError
	if errors.As(err, &te) {
		return true, te.RetryAfter
	}
	var ae *APIError
	if errors.As(err, &ae) {
		return transientStatus(ae.StatusCode, ae.Type), ae.RetryAfter
	}
	if errors.Is(err, ErrTransient) {
		return true, 0
	}
	if errors.Is(err, ErrMissingCredential) || errors.Is(err, ErrBadResponse) || errors.Is(err, ErrEmptySummary) {
		return false, 0
	}
	return transientTransport(err), 0
}

// transientStatus decides by status code, refined by the provider's error
// type or code: OpenAI answers an exhausted quota with 429 too, and waiting
// does not refill it.
func transientStatus(status int, kind string) bool {
	switch kind {
	case "insufficient_quota", "billing_error":
		return false
	case "overloaded_error", "rate_limit_error", "timeout_error":
		return true
	}
	switch {
	case status == http.StatusRequestTimeout, status == http.StatusConflict,
		status == http.StatusTooManyRequests, status >= 500:
		return true
	}
	return false
}

// transientTransport recognises connection-level failures.
func transientTransport(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, io.ErrUnexpectedEOF) {
		return true
	}
	// A bare EOF means many things; inside a transport error it is the
	// server closing the connection before answering.
	var ue *url.Error
	if errors.As(err, &ue) && errors.Is(ue.Err, io.EOF) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Op == "dial" {
		// A DNS name that does not exist will not start existing on retry.
		var dnsErr *net.DNSError
		if errors.As(err, &dnsErr) && dnsErr.IsNotFound {
			return false
		}
		return true
	}
	return false
}

// ParseRetryAfter reads a server's wait hint from its answer's headers, as
// of now: retry-after-ms (OpenAI and Anthropic send it, finer grained) wins
// over Retry-After, which may be seconds or an HTTP date. It returns 0 when
// there is no usable hint. Providers put the result in APIError.RetryAfter.
func ParseRetryAfter(h http.Header, now time.Time) time.Duration {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

// MarkTransient wraps err in a *TransientError when Classify says it is
// worth retrying, keeping the retry-after hint, so that callers can test
// errors.Is(err, ErrTransient). Other errors, nil and errors already marked
// come back unchanged. Providers call it on every error they return.
func MarkTransient(err error) error {
	if err == nil {
		return nil
	}
	var te *TransientError
	if errors.As(err, &te) {
		return err
	}
	if transient, after := Classify(err); transient {
		return &TransientError{Err: err, RetryAfter: after}
	}
	return err
}

// TransportError words a failure to get an HTTP answer at all (refused,
// reset or dropped connection, an attempt out of time) as one line
// "prefix: what happened: err", and marks it transient when Classify says
// so. timeout is the per-attempt limit the caller set, named in the line
// when the attempt ran out of it.
func TransportError(prefix string, timeout time.Duration, err error) error {
	return MarkTransient(describeTransport(prefix, timeout, err))
}

// describeTransport words a transport failure for the one-line error:
// an attempt that ran out of time says so and after how long.
func describeTransport(prefix string, timeout time.Duration, err error) error {
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return fmt.Errorf("%s: no answer within the %s request timeout: %w", prefix, timeout, err)
	}
	var ue *url.Error
	if errors.As(err, &ue) && errors.Is(ue.Err, io.EOF) {
		return fmt.Errorf("%s: the server closed the connection without answering: %w", prefix, err)
	}
	return fmt.Errorf("%s: %w", prefix, err)
}

// excerptLimit bounds how much of a server's body lands in an error line.
const excerptLimit = 200

// Excerpt turns a server's body into a short single line safe to show in
// an error: invalid UTF-8 and control characters flattened, every secret
// (a credential the server may echo back) replaced, and cut at 200 bytes on
// a rune boundary. Providers use it for APIError.Message.
func Excerpt(body []byte, secrets ...string) string {
	s := strings.ToValidUTF8(string(body), "\uFFFD")
	s = Redact(s, secrets...)
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > excerptLimit {
		cut := excerptLimit
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

// Redact replaces every secret of at least 4 bytes in s with
// "[redacted]": some APIs quote a rejected key in their error message.
func Redact(s string, secrets ...string) string {
	for _, secret := range secrets {
		if len(secret) >= 4 {
			s = strings.ReplaceAll(s, secret, "[redacted]")
		}
	}
	return s
}

// ErrTransient marks an error worth retrying (rate limits, overload, 5xx,
// connection failures). Providers wrap such errors so that errors.Is finds it.
var ErrTransient = errors.New("transient summarizer error")

// TransientError is a transient failure that may carry the server's
// retry-after hint.
type TransientError struct {
	Err        error
	RetryAfter time.Duration // 0 when the server gave none
}

func (e *TransientError) Error() string { return e.Err.Error() }
func (e *TransientError) Unwrap() []error {
	return []error{e.Err, ErrTransient}
}
