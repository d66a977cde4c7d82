package hooks

import (
	"context"
	"encoding/json"

	"github.com/hashicorp/go-hclog"
)

// HostAPI is what a plugin may call back into the host for (docs/behaviour.md §13): the
// engine implements it; internal/pluginhost serves it to subprocesses over the
// go-plugin broker, and the host's dispatcher hands it to in-process handlers
// through the context (HostFromContext).
type HostAPI interface {
	// ReadEntries returns a session's entries as their original JSON lines.
	ReadEntries(ctx context.Context, req ReadEntriesRequest) ([]json.RawMessage, error)
	// EstimateTokens estimates each message's tokens (docs/behaviour.md §3).
	EstimateTokens(ctx context.Context, messages []json.RawMessage) ([]int, error)
	// Complete runs one completion on the host's configured summarizer, so a
	// plugin needs no credentials of its own.
	Complete(ctx context.Context, req CompleteRequest) (CompleteResponse, error)
	// Log writes a line to the host's log under the plugin's name. For
	// subprocesses pluginhost writes these lines to the plugin's logger
	// itself; the engine's Log serves in-process handlers.
	Log(ctx context.Context, level hclog.Level, msg string, keyvals ...any) error
}

// ReadEntriesRequest selects the entries ReadEntries returns.
type ReadEntriesRequest struct {
	// SessionID is the session to read; only the event's own session is allowed.
	SessionID string
	// LeafID, when set, is the leaf the path is taken from; default the
	// session's current leaf. It matters only with PathOnly.
	LeafID string
	// PathOnly limits the answer to the path root → leaf, else every entry
	// of the file in file order.
	PathOnly bool
	// Offset skips that many entries of the answer (the header line of a
	// whole-file read counts as one). Limit, when positive, pages: at most
	// Limit entries, and fewer when the page would pass the plugin's
	// limits.pathEntriesBytes (at least 1 MiB; served to a plugin process;
	// a page holds at least one entry); an empty
	// page means the end. Without a Limit an answer over that is refused
	// (ResourceExhausted).
	Offset int
	// Limit, when positive, is the page size (see Offset).
	Limit int
}

// CompleteRequest is one completion on the host's summarizer.
type CompleteRequest struct {
	// SystemPrompt is the system prompt; may be empty.
	SystemPrompt string
	// Prompt is the user prompt.
	Prompt string
	// MaxTokens caps the answer; the host caps it further at limits.completeMaxTokens.
	MaxTokens int
}

// CompleteResponse is the host summarizer's answer.
type CompleteResponse struct {
	// Text is the answer.
	Text string
	// FinishReason is "stop" for a complete answer, "length" when cut off.
	FinishReason string
	// Model is the model that answered.
	Model string
}

type hostKey struct{}

// WithHost returns a context carrying h for HostFromContext.
func WithHost(ctx context.Context, h HostAPI) context.Context {
	return context.WithValue(ctx, hostKey{}, h)
}

// HostFromContext returns the HostAPI available to the running handler.
func HostFromContext(ctx context.Context) (HostAPI, bool) {
	h, ok := ctx.Value(hostKey{}).(HostAPI)
	return h, ok && h != nil
}
