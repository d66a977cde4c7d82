package llm

import (
	"net/http"
	"time"

	"github.com/pith-dev/pith/summarize"
)

// apiError reduces a provider's error answer to a *summarize.APIError,
// marked transient when summarize.Classify says so. msg is the provider's
// own message (or "" to quote the body instead, for servers whose error
// body is not the API's JSON: proxies, local servers), kind its error type
// or code; key is the credential to redact.
func apiError(provider, model string, status int, kind, msg string, header http.Header, body []byte, key string) error {
	if msg == "" {
		msg = string(body)
	}
	return summarize.MarkTransient(&summarize.APIError{
		Provider:   provider,
		Model:      model,
		StatusCode: status,
		Type:       kind,
		Message:    summarize.Excerpt([]byte(msg), key),
		RetryAfter: summarize.ParseRetryAfter(header, time.Now()),
	})
}
