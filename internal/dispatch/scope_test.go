package dispatch_test

import (
	"context"
	"encoding/json"
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/pith-dev/pith/hooks"
	"github.com/pith-dev/pith/internal/dispatch"
)

// recordingHost answers everything and records what reached it.
type recordingHost struct {
	reads     []hooks.ReadEntriesRequest
	maxTokens []int
}

func (h *recordingHost) ReadEntries(_ context.Context, req hooks.ReadEntriesRequest) ([]json.RawMessage, error) {
	h.reads = append(h.reads, req)
	return nil, nil
}

func (h *recordingHost) EstimateTokens(_ context.Context, m []json.RawMessage) ([]int, error) {
	return make([]int, len(m)), nil
}

func (h *recordingHost) Complete(_ context.Context, req hooks.CompleteRequest) (hooks.CompleteResponse, error) {
	h.maxTokens = append(h.maxTokens, req.MaxTokens)
	return hooks.CompleteResponse{Text: "ok"}, nil
}

func (h *recordingHost) Log(context.Context, hclog.Level, string, ...any) error { return nil }

func TestScopedHost(t *testing.T) {
	ctx := context.Background()
	rec := &recordingHost{}
	s := dispatch.NewScopedHost(rec, dispatch.Scope{SessionID: "A", Limits: hooks.Limits{CompleteMaxTokens: 500, CompletePromptBytes: 100, EstimateBytes: 10}})

	if _, err := s.ReadEntries(ctx, hooks.ReadEntriesRequest{SessionID: "B"}); !errors.Is(err, hooks.ErrPermissionDenied) {
		t.Errorf("read of another session: %v", err)
	}
	if _, err := s.ReadEntries(ctx, hooks.ReadEntriesRequest{}); err != nil {
		t.Errorf("read of its own session: %v", err)
	}
	if len(rec.reads) != 1 || rec.reads[0].SessionID != "A" {
		t.Errorf("reads reaching the host: %+v, want one of session A", rec.reads)
	}

	for _, asked := range []int{0, 100, 5000} {
		if _, err := s.Complete(ctx, hooks.CompleteRequest{Prompt: "p", MaxTokens: asked}); err != nil {
			t.Fatal(err)
		}
	}
	if got := rec.maxTokens; len(got) != 3 || got[0] != 500 || got[1] != 100 || got[2] != 500 {
		t.Errorf("max tokens reaching the host %v, want [500 100 500]", got)
	}
	if _, err := s.Complete(ctx, hooks.CompleteRequest{Prompt: strings.Repeat("p", 101)}); !errors.Is(err, dispatch.ErrOverLimit) || !strings.Contains(err.Error(), "completePromptBytes") {
		t.Errorf("oversized prompt: %v", err)
	}
	if _, err := s.EstimateTokens(ctx, []json.RawMessage{json.RawMessage(`"0123456789"`)}); !errors.Is(err, dispatch.ErrOverLimit) {
		t.Errorf("oversized estimate: %v", err)
	}

	s.Revoke()
	if _, err := s.ReadEntries(ctx, hooks.ReadEntriesRequest{}); !errors.Is(err, hooks.ErrPermissionDenied) {
		t.Errorf("read after the call ended: %v", err)
	}
	if _, err := s.Complete(ctx, hooks.CompleteRequest{Prompt: "p"}); !errors.Is(err, hooks.ErrPermissionDenied) {
		t.Errorf("completion after the call ended: %v", err)
	}
}

// blockingHost's Complete runs until its context ends, and says why.
type blockingHost struct {
	recordingHost
	started chan struct{}
}

func (h *blockingHost) Complete(ctx context.Context, _ hooks.CompleteRequest) (hooks.CompleteResponse, error) {
	h.started <- struct{}{}
	<-ctx.Done()
	return hooks.CompleteResponse{}, context.Cause(ctx)
}

// TestRevokeCancelsRunningCalls: a call still running when the capability
// is revoked is cancelled, whatever the context its caller gave it.
func TestRevokeCancelsRunningCalls(t *testing.T) {
	h := &blockingHost{started: make(chan struct{}, 1)}
	s := dispatch.NewScopedHost(h, dispatch.Scope{SessionID: "A"})
	errc := make(chan error, 1)
	go func() {
		_, err := s.Complete(context.Background(), hooks.CompleteRequest{Prompt: "p"})
		errc <- err
	}()
	<-h.started
	s.Revoke()
	if err := <-errc; !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "has ended") {
		t.Fatalf("revoked call ended with %v, want cancelled with the capability's end", err)
	}
}

// TestAdmitCountsUntilItsContextEnds: Admit takes a place among
// hostCallsInFlight, which the methods called under its context do not
// take again, and gives it back when that context ends.
func TestAdmitCountsUntilItsContextEnds(t *testing.T) {
	s := dispatch.NewScopedHost(&recordingHost{}, dispatch.Scope{SessionID: "A", Limits: hooks.Limits{HostCallsInFlight: 1}})
	base, end := context.WithCancel(context.Background())
	ctx, err := s.Admit(base)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReadEntries(ctx, hooks.ReadEntriesRequest{}); err != nil {
		t.Fatalf("a call under its admission: %v", err)
	}
	if _, err := s.Admit(context.Background()); !errors.Is(err, dispatch.ErrOverLimit) {
		t.Fatalf("a second admission past hostCallsInFlight (1): %v", err)
	}
	end()
	// The place is given back once the admitted context's end is seen.
	for {
		_, err := s.Admit(context.Background())
		if err == nil {
			break
		}
		if !errors.Is(err, dispatch.ErrOverLimit) {
			t.Fatal(err)
		}
		runtime.Gosched()
	}
}
