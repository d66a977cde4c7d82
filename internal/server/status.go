package server

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"syscall"
	"time"

	"github.com/pith-dev/pith/core/branch"
	"github.com/pith-dev/pith/core/engine"
	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/hooks"
	pb "github.com/pith-dev/pith/internal/gen/pith/session/v1"
	"github.com/pith-dev/pith/store"
	"github.com/pith-dev/pith/store/files"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
)

// Every error leaving the SessionService gets its code here, and only
// here, so a client branches on the same code for the same cause whatever
// the call. The store's errors:
//
//   - store.ErrConflict → Aborted: the session moved under the call in a
//     way it cannot follow (another host moved it to another branch, or
//     rewrote it), nothing written; the message says what to do. An
//     append that only raced another host's is appended after it.
//   - store.ErrLeaseHeld, store.ErrLeaseLost → Aborted: another host holds
//     the session's compaction lease; retry later.
//   - store.ErrUnavailable → Unavailable: the database cannot be reached;
//     retrying later is safe after reading the session (an append whose
//     commit reply was lost may have landed).
//   - store.ErrNotFound → NotFound, store.ErrExists → AlreadyExists.
//
// And the daemon's own: ErrBusy (a caller's calls in flight at their
// bound) → Unavailable with a RetryInfo detail, retried by clients;
// ErrLimit (a size or count limit, server.maxSessionBytes for files and
// stored sessions alike) → ResourceExhausted, final.
//
// Where one code covers several causes (FailedPrecondition, Aborted), the
// status also carries a google.rpc.ErrorInfo naming the cause, a value of
// session.proto's ErrorReason: clients branch on it, not on the words.

// busyRetryDelay is the back-off a busy refusal suggests: about a short
// call's time, so a retry finds a slot given back.
const busyRetryDelay = 50 * time.Millisecond

// busyStatus is an ErrBusy refusal: Unavailable, the code gRPC clients
// and their retry policies treat as passing (retry with a back-off), with
// a google.rpc.RetryInfo detail saying that nothing ran and when to try
// again. The detail is what tells it from the Unavailable of an
// unreachable store, after which an append may have landed and must not
// be retried blindly. ResourceExhausted, which a size or count limit
// answers, is left to what retrying cannot fix.
func busyStatus(err error) error {
	st := status.New(codes.Unavailable, err.Error())
	if d, derr := st.WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(busyRetryDelay)}); derr == nil {
		st = d
	}
	return st.Err()
}

// refusalMessage is the message of err's status, which a stream ended by
// the refusal (endStreams) carries to refusedStream.
func refusalMessage(err error) string { return status.Convert(toStatus(err)).Message() }

// refusedStream is the status a stream ends with on a sessionRefused
// marker: the one every call on the session gets, ResourceExhausted.
func refusedStream(ev *engine.Event) error {
	return status.Error(codes.ResourceExhausted, ev.Error)
}

// toStatus maps an error onto the gRPC code a client can branch on.
func toStatus(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	if errors.Is(err, ErrBusy) {
		return busyStatus(err)
	}
	code, reason := codes.Internal, pb.ErrorReason_ERROR_REASON_UNSPECIFIED
	switch {
	case errors.Is(err, store.ErrUnavailable):
		// The shared store is down or unreachable. Nothing was written
		// by this call, except for an append whose commit reply was lost:
		// then the entries may be in the store, and the session is
		// re-read before its next call, so the client sees them in
		// GetContext; it must look there before appending again.
		code = codes.Unavailable
		err = fmt.Errorf("%w; nothing was changed unless a GetContext now shows it: read the session before retrying", err)
	case errors.Is(err, store.ErrConflict):
		// Another host moved the session to another branch or rewrote
		// it under the call (store.Session catches up with plain
		// appends itself): read it again and decide.
		code, reason = codes.Aborted, pb.ErrorReason_ERROR_REASON_CONFLICT
	case errors.Is(err, store.ErrLeaseHeld), errors.Is(err, store.ErrLeaseLost), errors.Is(err, engine.ErrCompactingElsewhere):
		// Another host compacts or prunes the session now: a conflict
		// in time, retry later (its result arrives as an event).
		code, reason = codes.Aborted, pb.ErrorReason_ERROR_REASON_BUSY_ELSEWHERE
	case errors.Is(err, store.ErrNotFound):
		code = codes.NotFound
	case errors.Is(err, store.ErrExists):
		code = codes.AlreadyExists
	case errors.Is(err, ErrUnauthenticated):
		code = codes.Unauthenticated
	case errors.Is(err, ErrLimit):
		code = codes.ResourceExhausted
	case errors.Is(err, files.ErrNotRegular), errors.Is(err, syscall.EISDIR), errors.Is(err, syscall.ENOTDIR):
		// A directory, FIFO or symlink where a session file should be, or
		// a file where a directory should be.
		code = codes.InvalidArgument
	case errors.Is(err, files.ErrHardLinked):
		code = codes.PermissionDenied
	case errors.Is(err, session.ErrReadOnly):
		code, reason = codes.FailedPrecondition, pb.ErrorReason_ERROR_REASON_READ_ONLY
	case errors.Is(err, ErrOutsideRoot), errors.Is(err, ErrForbidden):
		code = codes.PermissionDenied
	case errors.Is(err, ErrInvalidPath), errors.Is(err, errInvalid), errors.Is(err, session.ErrInvalidClientInput), errors.Is(err, engine.ErrNotAssistant):
		code = codes.InvalidArgument
	case errors.Is(err, ErrNoSession), errors.Is(err, fs.ErrNotExist):
		code = codes.NotFound
	case errors.Is(err, ErrShuttingDown), errors.Is(err, errEvicted):
		code = codes.Unavailable
	case errors.Is(err, errConflict), errors.Is(err, fs.ErrExist):
		code = codes.AlreadyExists
	case errors.Is(err, context.DeadlineExceeded):
		code = codes.DeadlineExceeded
	case errors.Is(err, context.Canceled), errors.Is(err, engine.ErrAborted):
		code = codes.Canceled
	case errors.Is(err, engine.ErrCancelled), errors.Is(err, branch.ErrCancelled):
		// A plugin's veto: the operation was refused as things stand,
		// not broken.
		code, reason = codes.FailedPrecondition, pb.ErrorReason_ERROR_REASON_CANCELLED_BY_PLUGIN
	case errors.Is(err, hooks.ErrPluginFailed):
		// A `failure: closed` plugin that failed.
		code, reason = codes.FailedPrecondition, pb.ErrorReason_ERROR_REASON_PLUGIN_FAILED
	case errors.Is(err, engine.ErrNothingToCompact):
		code, reason = codes.FailedPrecondition, pb.ErrorReason_ERROR_REASON_NOTHING_TO_COMPACT
	case errors.Is(err, branch.ErrNothingToSummarize):
		code, reason = codes.FailedPrecondition, pb.ErrorReason_ERROR_REASON_NOTHING_TO_SUMMARIZE
	case errors.Is(err, session.ErrOldVersion):
		code, reason = codes.FailedPrecondition, pb.ErrorReason_ERROR_REASON_OLD_VERSION
	case errors.Is(err, engine.ErrAutoCompactionDisabled):
		code, reason = codes.FailedPrecondition, pb.ErrorReason_ERROR_REASON_AUTO_COMPACTION_DISABLED
	case errors.Is(err, engine.ErrStillAboveThreshold):
		code, reason = codes.FailedPrecondition, pb.ErrorReason_ERROR_REASON_STILL_ABOVE_THRESHOLD
	case errors.Is(err, fs.ErrPermission):
		code = codes.PermissionDenied
	}
	st := status.New(code, err.Error())
	if reason != pb.ErrorReason_ERROR_REASON_UNSPECIFIED {
		// The reason tells apart what one code covers (nothing to
		// compact, a veto, ...), so that no client matches words.
		if d, derr := st.WithDetails(&errdetails.ErrorInfo{Reason: reason.String(), Domain: errorDomain()}); derr == nil {
			st = d
		}
	}
	return st.Err()
}

// errorDomain is the domain of the google.rpc.ErrorInfo a refusal
// carries: the package of session.proto, which defines ErrorReason.
func errorDomain() string { return string(pb.File_pith_session_v1_session_proto.Package()) }
