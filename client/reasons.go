package client

import (
	"errors"

	pb "github.com/pith-dev/pith/internal/gen/pith/session/v1"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/status"
)

// Why a call failed where its code alone does not say: an error that
// matches ErrFailedPrecondition or ErrAborted matches one of these too when
// the daemon gave its reason (session.proto's ErrorReason, carried as a
// google.rpc.ErrorInfo). Branch on them, not on the message's words.
var (
	// ErrNothingToCompact: the context has nothing old enough to
	// summarize. With ErrFailedPrecondition.
	ErrNothingToCompact = errors.New("nothing to compact")
	// ErrNothingToSummarize: the abandoned branch has nothing to
	// summarize. With ErrFailedPrecondition.
	ErrNothingToSummarize = errors.New("nothing to summarize")
	// ErrCancelledByPlugin: a plugin vetoed the compaction or the
	// navigation; nothing was written. With ErrFailedPrecondition.
	ErrCancelledByPlugin = errors.New("cancelled by a plugin")
	// ErrPluginFailed: a plugin configured with `failure: closed` failed,
	// so the operation did not run. With ErrFailedPrecondition.
	ErrPluginFailed = errors.New("a required plugin failed")
	// ErrOldVersion: the session file is of an older format version
	// (`pith migrate`). With ErrFailedPrecondition.
	ErrOldVersion = errors.New("old session version")
	// ErrReadOnly: the session is open read-only. With
	// ErrFailedPrecondition.
	ErrReadOnly = errors.New("read-only session")
	// ErrAutoCompactionDisabled: automatic compaction is off, by
	// configuration or after repeated failures. With
	// ErrFailedPrecondition.
	ErrAutoCompactionDisabled = errors.New("automatic compaction disabled")
	// ErrStillAboveThreshold: a compaction ran and the context is still
	// above the threshold. With ErrFailedPrecondition.
	ErrStillAboveThreshold = errors.New("still above the threshold")
	// ErrConflict: another host changed the session under the call. With
	// ErrAborted.
	ErrConflict = errors.New("changed by another host")
	// ErrBusyElsewhere: another host is compacting or pruning the
	// session (it holds its lease). With ErrAborted.
	ErrBusyElsewhere = errors.New("busy on another host")
)

// reasons are the errors ErrorInfo reasons stand for, by the reason's
// name as the daemon sends it.
var reasons = map[string]error{
	pb.ErrorReason_ERROR_REASON_NOTHING_TO_COMPACT.String():       ErrNothingToCompact,
	pb.ErrorReason_ERROR_REASON_NOTHING_TO_SUMMARIZE.String():     ErrNothingToSummarize,
	pb.ErrorReason_ERROR_REASON_CANCELLED_BY_PLUGIN.String():      ErrCancelledByPlugin,
	pb.ErrorReason_ERROR_REASON_PLUGIN_FAILED.String():            ErrPluginFailed,
	pb.ErrorReason_ERROR_REASON_OLD_VERSION.String():              ErrOldVersion,
	pb.ErrorReason_ERROR_REASON_READ_ONLY.String():                ErrReadOnly,
	pb.ErrorReason_ERROR_REASON_AUTO_COMPACTION_DISABLED.String(): ErrAutoCompactionDisabled,
	pb.ErrorReason_ERROR_REASON_STILL_ABOVE_THRESHOLD.String():    ErrStillAboveThreshold,
	pb.ErrorReason_ERROR_REASON_CONFLICT.String():                 ErrConflict,
	pb.ErrorReason_ERROR_REASON_BUSY_ELSEWHERE.String():           ErrBusyElsewhere,
}

// errorDomain is the ErrorInfo domain of the daemon's reasons: the
// package of session.proto, which defines them.
func errorDomain() string { return string(pb.File_pith_session_v1_session_proto.Package()) }

// reasonOf is the error the status's ErrorInfo reason stands for, nil
// when it has none this client knows.
func reasonOf(st *status.Status) error {
	for _, d := range st.Details() {
		if ei, ok := d.(*errdetails.ErrorInfo); ok && ei.GetDomain() == errorDomain() {
			return reasons[ei.GetReason()]
		}
	}
	return nil
}

// callError is a failed call's error: its text, and the sentinels it
// matches (its code's, and its reason's when it has one).
type callError struct {
	msg   string
	kinds []error
}

func (e *callError) Error() string   { return e.msg }
func (e *callError) Unwrap() []error { return e.kinds }
