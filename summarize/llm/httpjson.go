package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/pith-dev/pith/summarize"
)

// maxResponseBytes bounds how much of an answer is read: a summary or a
// tool turn is a few hundred kilobytes at most, and a server streaming
// without end must not fill the memory.
const maxResponseBytes = 32 << 20

// endpoint joins an API root and a path the way the provider SDKs did: the
// root is taken as a directory (a missing trailing slash is added) and the
// path resolved against it, so "http://h/v1" and "http://h/v1/" both reach
// http://h/v1/chat/completions.
func endpoint(base, path string) (string, error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", fmt.Errorf("invalid base URL %q: %w", base, err)
	}
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
		if u.RawPath != "" {
			u.RawPath += "/"
		}
	}
	return u.ResolveReference(&url.URL{Path: path}).String(), nil
}

// jsonClient is what both providers share: one JSON POST per attempt, no
// retries of its own (the Chain retries), errors as the summarize package
// classifies them.
type jsonClient struct {
	provider string // "openai summarizer", for error lines
	model    string
	url      string
	timeout  time.Duration
	http     *http.Client
	// escapeHTML writes <, > and & as \u003c and the like, as the official
	// SDK of the provider did (Anthropic's did, OpenAI's did not), so the
	// request bytes stay what they were.
	escapeHTML bool
	// failure words an answer with a status of 400 or more, read whole, in
	// the provider's own error format.
	failure func(status int, header http.Header, body []byte, key string) error
}

// post sends body as JSON with header and decodes a 2xx answer into out.
// Errors come back final: the caller's own cancellation as ctx.Err(), an
// error status as c.failure words it, a transport failure marked transient
// when Classify says so, a body that is not the expected JSON as
// summarize.ErrBadResponse. key is the credential to keep out of every
// error text.
func (c *jsonClient) post(ctx context.Context, header http.Header, body, out any, key string) error {
	var data bytes.Buffer
	enc := json.NewEncoder(&data)
	enc.SetEscapeHTML(c.escapeHTML)
	if err := enc.Encode(body); err != nil {
		return fmt.Errorf("%s: %s: encode request: %w", c.provider, c.model, err)
	}
	data.Truncate(data.Len() - 1) // Encode's newline
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, &data)
	if err != nil {
		return fmt.Errorf("%s: %s: build request: %w", c.provider, c.model, err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	prefix := c.provider + ": " + c.model
	resp, err := c.http.Do(req)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		return summarize.TransportError(prefix, c.timeout, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		return summarize.TransportError(prefix, c.timeout, fmt.Errorf("error reading response body: %w", err))
	}
	if resp.StatusCode >= 400 {
		return c.failure(resp.StatusCode, resp.Header, raw, key)
	}
	if len(raw) > maxResponseBytes {
		return fmt.Errorf("%s: %w: response larger than %d bytes", prefix, summarize.ErrBadResponse, maxResponseBytes)
	}
	if err := json.NewDecoder(bytes.NewReader(raw)).Decode(out); err != nil {
		return fmt.Errorf("%s: %w: %s", prefix, summarize.ErrBadResponse,
			summarize.Redact("error parsing response json: "+err.Error(), key))
	}
	return nil
}
