package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/hashicorp/go-hclog"
	"github.com/pith-dev/pith/core/jsondepth"
	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/core/summary"
	"github.com/pith-dev/pith/core/tokens"
	"github.com/pith-dev/pith/hooks"
)

// HostAPI is what plugins may call back into (docs/behaviour.md §13): read a session's
// entries, estimate tokens, and run a completion on the host's configured
// summarizer, so a plugin needs no credentials of its own.
type HostAPI struct {
	// Lookup finds an open session by its header id.
	Lookup     func(sessionID string) (session.Backend, bool)
	Summarizer summary.Summarizer
	Logger     hclog.Logger
	// MaxOutputTokens, when positive, caps a completion's output tokens
	// whatever a plugin asks (summarizer.maxOutputTokens); each plugin's
	// own completeMaxTokens applies first (dispatch.ScopedHost).
	MaxOutputTokens int
}

var _ hooks.HostAPI = (*HostAPI)(nil)

// SingleSession is a Lookup for a host with one open session.
func SingleSession(store session.Backend) func(string) (session.Backend, bool) {
	id := store.File().Header.ID
	return func(sid string) (session.Backend, bool) {
		return store, sid == "" || sid == id
	}
}

// ReadEntries returns the entries as their original JSON lines. A read of
// the whole file starts with the header line, as the file does, so a plugin
// can learn the session's cwd; a path read has entries only.
func (h *HostAPI) ReadEntries(_ context.Context, req hooks.ReadEntriesRequest) ([]json.RawMessage, error) {
	store, ok := h.Lookup(req.SessionID)
	if !ok {
		return nil, fmt.Errorf("no open session %q", req.SessionID)
	}
	tree := store.Tree()
	entries := tree.Entries
	if req.PathOnly {
		leaf := store.Leaf()
		if req.LeafID != "" {
			if leaf = tree.Get(req.LeafID); leaf == nil {
				return nil, fmt.Errorf("session %s has no entry %q", req.SessionID, req.LeafID)
			}
		}
		entries = tree.Path(leaf)
	}
	// Page before copying: a plugin paging a huge path would otherwise
	// pay for the whole path on every page.
	offset := max(req.Offset, 0)
	var out []json.RawMessage
	if !req.PathOnly {
		if offset == 0 {
			out = append(out, store.File().Header.Raw)
		} else {
			offset-- // the header line counts as one
		}
	}
	entries = entries[min(offset, len(entries)):]
	if req.Limit > 0 {
		entries = entries[:min(req.Limit-len(out), len(entries))]
	}
	out = slices.Grow(out, len(entries))
	for _, e := range entries {
		out = append(out, e.Raw)
	}
	return out, nil
}

// EstimateTokens estimates each message (docs/behaviour.md §3). A message nested deeper
// than jsondepth.Max is refused, like such a line in a session file.
func (h *HostAPI) EstimateTokens(_ context.Context, messages []json.RawMessage) ([]int, error) {
	out := make([]int, len(messages))
	for i, m := range messages {
		if err := jsondepth.Check(m); err != nil {
			return nil, fmt.Errorf("%w: message %d: %w", hooks.ErrInvalidArgument, i+1, err)
		}
		out[i] = tokens.Estimate(m)
	}
	return out, nil
}

// Complete runs one completion on the host's summarizer.
func (h *HostAPI) Complete(ctx context.Context, req hooks.CompleteRequest) (hooks.CompleteResponse, error) {
	if h.Summarizer == nil {
		return hooks.CompleteResponse{}, fmt.Errorf("the host has no summarizer")
	}
	if h.MaxOutputTokens > 0 && (req.MaxTokens <= 0 || req.MaxTokens > h.MaxOutputTokens) {
		req.MaxTokens = h.MaxOutputTokens
	}
	res, err := h.Summarizer.Summarize(ctx, summary.Request{
		Purpose: summary.PurposeCompletion, SystemPrompt: req.SystemPrompt, Prompt: req.Prompt, MaxTokens: req.MaxTokens,
	})
	if err != nil {
		return hooks.CompleteResponse{}, err
	}
	return hooks.CompleteResponse{Text: res.Text, FinishReason: string(res.FinishReason)}, nil
}

// Log writes an in-process handler's line to the host's log.
func (h *HostAPI) Log(_ context.Context, level hclog.Level, msg string, keyvals ...any) error {
	if h.Logger != nil {
		h.Logger.Log(level, msg, keyvals...)
	}
	return nil
}
