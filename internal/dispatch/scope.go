package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"

	"github.com/pith-dev/pith/hooks"
)

// Scope is what one plugin call may reach through the HostAPI: the session
// of the event it serves, within the plugin's limits.
type Scope struct {
	SessionID string
	Limits    hooks.Limits
}

// ScopedHost is the HostAPI a plugin gets for one call: a capability for
// the call's session, valid until Revoke (the Dispatcher and pluginhost
// revoke it when the call returns). Every path to the host's API — the
// Dispatcher's context for in-process handlers, pluginhost's server for
// subprocesses — goes through it, so these checks are made in one place.
type ScopedHost struct {
	host    hooks.HostAPI
	scope   Scope
	revoked atomic.Bool
	// life ends when the capability is revoked: every host call runs
	// under it, so one still running when its plugin call ends (a
	// completion on the host's model, on the operator's account) is
	// cancelled rather than left to run under the plugin's own request
	// context, which a hostile plugin keeps open.
	life   context.Context
	revoke context.CancelFunc
	// running counts the calls in flight (limits.hostCallsInFlight),
	// completions those made (limits.completeCalls).
	running, completions atomic.Int64
}

// NewScopedHost returns a capability over h for scope.
func NewScopedHost(h hooks.HostAPI, scope Scope) *ScopedHost {
	scope.Limits = LimitsOrDefaults(scope.Limits)
	life, revoke := context.WithCancel(context.Background())
	return &ScopedHost{host: h, scope: scope, life: life, revoke: revoke}
}

// Revoke ends the capability: every later call is refused, and every call
// still running is cancelled.
func (s *ScopedHost) Revoke() {
	s.revoked.Store(true)
	s.revoke()
}

// Limits are the limits the capability enforces (its scope's, defaults
// filled in).
func (s *ScopedHost) Limits() hooks.Limits { return s.scope.Limits }

func (s *ScopedHost) live() error {
	if s.revoked.Load() {
		return fmt.Errorf("%w: the plugin call this host API was granted for has ended", hooks.ErrPermissionDenied)
	}
	if s.host == nil {
		return errors.New("this host offers no host API")
	}
	return nil
}

// enter starts a host call: the capability must be live, and the call
// one of at most limits.hostCallsInFlight running. A plugin is a
// third-party program: without the bound, one firing calls concurrently
// made the host hold every request and answer at once (up to
// estimateBytes or a session's entries each). done ends the call.
//
// The call runs under ctx merged with the capability's life (callCtx),
// which Revoke cancels.
func (s *ScopedHost) enter(ctx context.Context) (callCtx context.Context, done func(), err error) {
	if err := s.live(); err != nil {
		return nil, nil, err
	}
	if ctx.Value(admittedKey{}) == s {
		return ctx, func() {}, nil // counted and bound to the capability by Admit
	}
	if max := s.scope.Limits.HostCallsInFlight; s.running.Add(1) > int64(max) {
		s.running.Add(-1)
		return nil, nil, &LimitError{What: "host API calls running at once", Limit: "hostCallsInFlight", Max: max}
	}
	callCtx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(s.life, func() {
		cancel(fmt.Errorf("%w: the plugin call this host API was granted for has ended", context.Canceled))
	})
	return callCtx, func() {
		stop()
		cancel(context.Canceled)
		s.running.Add(-1)
	}, nil
}

type admittedKey struct{}

// Admit starts a host call that a transport serves before it has read the
// call's request (pluginhost's server does, as soon as a call's headers
// arrive): the capability must be live and the call one of at most
// limits.hostCallsInFlight running, else the request is refused before a
// byte of it is buffered. It returns the context to read and serve the
// call under: it ends when the capability is revoked, and the call's
// place among limits.hostCallsInFlight is given back when ctx ends — the
// transport ends it with the call, whichever way the call ends. The
// ScopedHost's methods called under it do not count the call again.
func (s *ScopedHost) Admit(ctx context.Context) (context.Context, error) {
	callCtx, done, err := s.enter(ctx)
	if err != nil {
		return nil, err
	}
	context.AfterFunc(callCtx, done)
	return context.WithValue(callCtx, admittedKey{}, s), nil
}

// ReadEntries reads the call's own session only; an empty session id means
// it.
func (s *ScopedHost) ReadEntries(ctx context.Context, req hooks.ReadEntriesRequest) ([]json.RawMessage, error) {
	ctx, done, err := s.enter(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	if req.SessionID == "" {
		req.SessionID = s.scope.SessionID
	}
	if req.SessionID != s.scope.SessionID {
		return nil, fmt.Errorf("%w: this call may read session %q only", hooks.ErrPermissionDenied, s.scope.SessionID)
	}
	return s.host.ReadEntries(ctx, req)
}

// EstimateTokens refuses input over limits.estimateBytes.
func (s *ScopedHost) EstimateTokens(ctx context.Context, messages []json.RawMessage) ([]int, error) {
	ctx, done, err := s.enter(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	total := 0
	for _, m := range messages {
		total += len(m)
	}
	if err := overBytes("token estimate input", "estimateBytes", total, s.scope.Limits.EstimateBytes); err != nil {
		return nil, err
	}
	return s.host.EstimateTokens(ctx, messages)
}

// Complete refuses a prompt over limits.completePromptBytes, and a
// completion past limits.completeCalls, and caps the output at
// limits.completeMaxTokens (no or a larger request gets the cap).
func (s *ScopedHost) Complete(ctx context.Context, req hooks.CompleteRequest) (hooks.CompleteResponse, error) {
	ctx, done, err := s.enter(ctx)
	if err != nil {
		return hooks.CompleteResponse{}, err
	}
	defer done()
	l := s.scope.Limits
	if err := overBytes("completion prompt", "completePromptBytes", len(req.SystemPrompt)+len(req.Prompt), l.CompletePromptBytes); err != nil {
		return hooks.CompleteResponse{}, err
	}
	if s.completions.Add(1) > int64(l.CompleteCalls) {
		return hooks.CompleteResponse{}, &LimitError{What: "host API completions in this plugin call", Limit: "completeCalls", Max: l.CompleteCalls}
	}
	if req.MaxTokens <= 0 || req.MaxTokens > l.CompleteMaxTokens {
		req.MaxTokens = l.CompleteMaxTokens
	}
	return s.host.Complete(ctx, req)
}

// Log is allowed while the capability lives.
func (s *ScopedHost) Log(ctx context.Context, level hclog.Level, msg string, keyvals ...any) error {
	if err := s.live(); err != nil {
		return err
	}
	return s.host.Log(ctx, level, msg, keyvals...)
}
