package llm

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/pith-dev/pith/summarize"
)

// apiError reduces a provider SDK's HTTP error to a *summarize.APIError,
// marked transient when summarize.Classify says so. It is the one place
// where an SDK error becomes a summarize error, so nothing past this
// package needs the SDK's types to classify a failure. msg is the
// provider's own message (or "" to quote the body instead), kind its error
// type or code; key is the credential to redact.
func apiError(provider, model string, status int, kind, msg string, resp *http.Response, key string) error {
	if msg == "" {
		msg = responseExcerpt(resp)
	}
	var after time.Duration
	if resp != nil {
		after = summarize.ParseRetryAfter(resp.Header, time.Now())
	}
	return summarize.MarkTransient(&summarize.APIError{
		Provider:   provider,
		Model:      model,
		StatusCode: status,
		Type:       kind,
		Message:    summarize.Excerpt([]byte(msg), key),
		RetryAfter: after,
	})
}

// transportError words an SDK failure that is not an HTTP status: a body
// that did not decode (permanent, summarize.ErrBadResponse) or a transport
// failure (transient when summarize.Classify says so).
func transportError(prefix string, timeout time.Duration, err error, key string) error {
	if isDecodeError(err) {
		return fmt.Errorf("%s: %w: %s", prefix, summarize.ErrBadResponse, summarize.Redact(err.Error(), key))
	}
	return summarize.TransportError(prefix, timeout, err)
}

// isDecodeError recognises an SDK failing to decode a complete 2xx body.
// The SDKs read the whole body before decoding and wrap decoding failures
// with this fixed text, so an io.ErrUnexpectedEOF under it is a truncated
// JSON document, not a dropped connection.
func isDecodeError(err error) bool {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	return errors.As(err, &se) || errors.As(err, &te) ||
		strings.HasPrefix(err.Error(), "error parsing response json")
}

// responseExcerpt reads the start of an error response the SDK kept, for
// servers whose error body is not the API's JSON (proxies, local servers).
func responseExcerpt(resp *http.Response) string {
	if resp == nil || resp.Body == nil {
		return ""
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return string(b)
}
