package server

import (
	"fmt"
	"testing"

	"github.com/pith-dev/pith/core/branch"
	"github.com/pith-dev/pith/core/engine"
	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/hooks"
	pb "github.com/pith-dev/pith/internal/gen/pith/session/v1"
	"github.com/pith-dev/pith/store"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestErrorReasons: every refusal that shares its code with others
// carries its ErrorReason, however deeply wrapped, and every reason of
// session.proto is given for some error (a reason no error gives is one
// clients wait for in vain).
func TestErrorReasons(t *testing.T) {
	if d := errorDomain(); d != "pith.session.v1" {
		t.Fatalf("ErrorInfo domain %q, docs/serve.md and session.proto say pith.session.v1", d)
	}
	given := map[pb.ErrorReason]bool{}
	for _, tc := range []struct {
		err    error
		code   codes.Code
		reason pb.ErrorReason
	}{
		{engine.ErrNothingToCompact, codes.FailedPrecondition, pb.ErrorReason_ERROR_REASON_NOTHING_TO_COMPACT},
		{branch.ErrNothingToSummarize, codes.FailedPrecondition, pb.ErrorReason_ERROR_REASON_NOTHING_TO_SUMMARIZE},
		{engine.ErrCancelled, codes.FailedPrecondition, pb.ErrorReason_ERROR_REASON_CANCELLED_BY_PLUGIN},
		{branch.ErrCancelled, codes.FailedPrecondition, pb.ErrorReason_ERROR_REASON_CANCELLED_BY_PLUGIN},
		{hooks.ErrPluginFailed, codes.FailedPrecondition, pb.ErrorReason_ERROR_REASON_PLUGIN_FAILED},
		{session.ErrOldVersion, codes.FailedPrecondition, pb.ErrorReason_ERROR_REASON_OLD_VERSION},
		{session.ErrReadOnly, codes.FailedPrecondition, pb.ErrorReason_ERROR_REASON_READ_ONLY},
		{engine.ErrAutoCompactionDisabled, codes.FailedPrecondition, pb.ErrorReason_ERROR_REASON_AUTO_COMPACTION_DISABLED},
		{engine.ErrStillAboveThreshold, codes.FailedPrecondition, pb.ErrorReason_ERROR_REASON_STILL_ABOVE_THRESHOLD},
		{store.ErrConflict, codes.Aborted, pb.ErrorReason_ERROR_REASON_CONFLICT},
		{store.ErrLeaseHeld, codes.Aborted, pb.ErrorReason_ERROR_REASON_BUSY_ELSEWHERE},
		{store.ErrLeaseLost, codes.Aborted, pb.ErrorReason_ERROR_REASON_BUSY_ELSEWHERE},
		{engine.ErrCompactingElsewhere, codes.Aborted, pb.ErrorReason_ERROR_REASON_BUSY_ELSEWHERE},
	} {
		st := status.Convert(toStatus(fmt.Errorf("session %q: compact: %w", "a.jsonl", tc.err)))
		if st.Code() != tc.code {
			t.Errorf("%v: code %v, want %v", tc.err, st.Code(), tc.code)
		}
		if got := reasonIn(st); got != tc.reason.String() {
			t.Errorf("%v: reason %q, want %q", tc.err, got, tc.reason)
		}
		given[tc.reason] = true
	}
	for v := range pb.ErrorReason_name {
		if r := pb.ErrorReason(v); r != pb.ErrorReason_ERROR_REASON_UNSPECIFIED && !given[r] {
			t.Errorf("no error gives %v", r)
		}
	}
	// A code no reason refines carries none.
	if got := reasonIn(status.Convert(toStatus(store.ErrNotFound))); got != "" {
		t.Errorf("NotFound carries reason %q", got)
	}
}

func reasonIn(st *status.Status) string {
	for _, d := range st.Details() {
		if ei, ok := d.(*errdetails.ErrorInfo); ok {
			if ei.GetDomain() != errorDomain() {
				return "domain " + ei.GetDomain()
			}
			return ei.GetReason()
		}
	}
	return ""
}
