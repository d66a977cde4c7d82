package sdktest

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/hashicorp/go-hclog"
	"github.com/pith-dev/pith/hooks"
	"github.com/pith-dev/pith/internal/dispatch"
)

// FakeHost is a HostAPI for tests: entries come from Sessions, completions
// from CompleteFunc (default: an echo of the prompt), and log lines are kept.
type FakeHost struct {
	// Sessions maps a session id to its entries in file order.
	Sessions map[string][]json.RawMessage
	// CompleteFunc answers Complete; nil echoes "completion of: <prompt>".
	CompleteFunc func(ctx context.Context, req hooks.CompleteRequest) (hooks.CompleteResponse, error)

	mu    sync.Mutex
	logs  []LogLine
	calls []string
}

// LogLine is one Log call.
type LogLine struct {
	Level   hclog.Level
	Message string
	KV      []any
}

var _ hooks.HostAPI = (*FakeHost)(nil)

func (f *FakeHost) record(call string) {
	f.mu.Lock()
	f.calls = append(f.calls, call)
	f.mu.Unlock()
}

// Calls lists the HostAPI methods called so far, in order.
func (f *FakeHost) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

// Logs returns the lines logged through Log.
func (f *FakeHost) Logs() []LogLine {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]LogLine(nil), f.logs...)
}

// ReadEntries returns the session's entries, paged by Offset and Limit;
// PathOnly and LeafID are not interpreted (the fake has no tree).
func (f *FakeHost) ReadEntries(_ context.Context, req hooks.ReadEntriesRequest) ([]json.RawMessage, error) {
	f.record("ReadEntries")
	entries, ok := f.Sessions[req.SessionID]
	if !ok {
		return nil, fmt.Errorf("session %q not found", req.SessionID)
	}
	entries = entries[min(max(req.Offset, 0), len(entries)):]
	if req.Limit > 0 && req.Limit < len(entries) {
		entries = entries[:req.Limit]
	}
	return entries, nil
}

// EstimateTokens estimates each message as its JSON text (docs/behaviour.md §3's
// chars/4 rule applied to the whole message).
func (f *FakeHost) EstimateTokens(_ context.Context, messages []json.RawMessage) ([]int, error) {
	f.record("EstimateTokens")
	out := make([]int, len(messages))
	for i, m := range messages {
		out[i] = dispatch.EstimateText(string(m))
	}
	return out, nil
}

// Complete calls CompleteFunc or echoes the prompt.
func (f *FakeHost) Complete(ctx context.Context, req hooks.CompleteRequest) (hooks.CompleteResponse, error) {
	f.record("Complete")
	if f.CompleteFunc != nil {
		return f.CompleteFunc(ctx, req)
	}
	return hooks.CompleteResponse{Text: "completion of: " + req.Prompt, FinishReason: "stop", Model: "fake"}, nil
}

// Log records the line.
func (f *FakeHost) Log(_ context.Context, level hclog.Level, msg string, keyvals ...any) error {
	f.record("Log")
	f.mu.Lock()
	f.logs = append(f.logs, LogLine{Level: level, Message: msg, KV: keyvals})
	f.mu.Unlock()
	return nil
}
