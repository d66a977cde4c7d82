package summarize

import (
	"net/http"
	"time"
)

// HTTPClientWithTimeout returns a copy of base (or a fresh client) whose
// every attempt is bounded by timeout; the remote endpoint and the provider
// clients (summarize/llm) all get their client from it. The http.Client
// timeout (rather than a context deadline) makes an expired attempt
// distinguishable from the caller's abort: it surfaces as a net.Error with
// Timeout() true, which Classify counts as transient.
func HTTPClientWithTimeout(base *http.Client, timeout time.Duration) *http.Client {
	c := &http.Client{}
	if base != nil {
		*c = *base
	}
	c.Timeout = timeout
	return c
}
