package engine

import (
	"errors"

	"github.com/pith-dev/pith/core/branch"
	"github.com/pith-dev/pith/core/compaction"
)

var (
	// ErrCancelled is returned when a plugin cancelled the compaction in
	// session_before_compact.
	ErrCancelled = errors.New("compaction cancelled")
	// ErrAborted is returned when AbortCompaction (or the caller's context)
	// stopped a compaction before it was saved; the session is unchanged.
	ErrAborted = errors.New("compaction aborted")
	// ErrNothingToCompact is core/compaction's sentinel, re-exported so
	// callers of the engine need not import that package to branch on it.
	ErrNothingToCompact = compaction.ErrNothingToCompact
	// ErrNoSummarizer is returned when a summary must be generated and
	// the engine was given no summarizer; navigation returns the same
	// error (core/branch's).
	ErrNoSummarizer = branch.ErrNoSummarizer
	// ErrAutoCompactionDisabled is returned on the overflow path when
	// automatic compaction is off: by configuration (compaction.enabled
	// false) or by the failure guard after three consecutive failures.
	ErrAutoCompactionDisabled = errors.New("automatic compaction is disabled")
	// ErrOverflowUnrecovered is returned when the context overflows again
	// in an episode that already had its one compact-and-retry attempt.
	ErrOverflowUnrecovered = errors.New("the context overflowed again after one compact-and-retry attempt")
	// ErrStillAboveThreshold is returned when a compaction would leave the
	// context above the threshold; the compaction is not saved.
	ErrStillAboveThreshold = errors.New("the context would still be above the compaction threshold")
	// ErrAlreadyTriggered is returned when an entry that already triggered
	// an automatic compaction would trigger another one.
	ErrAlreadyTriggered = errors.New("this entry already triggered a compaction")
	// errNoLongerDue: a threshold compaction that caught up with other
	// hosts under the lease found the context under the threshold again.
	errNoLongerDue = errors.New("another host compacted this session meanwhile; the context is under the threshold")
	// ErrNotAssistant is returned when AfterTurn or HandleAssistantError get
	// something that is not an assistant message.
	ErrNotAssistant = errors.New("not an assistant message")
	// ErrCompactingElsewhere: the session is shared between hosts and
	// another host holds its lease (it is compacting or pruning it); an
	// automatic compaction is skipped, not counted as a failure.
	ErrCompactingElsewhere = errors.New("another host is compacting this session")
)

// AutoCompactionError is the error of a failed automatic compaction. Its
// text starts with the phrase docs/behaviour.md §9.8 prescribes for the trigger:
// "Context overflow recovery failed: …" or "Auto-compaction failed: …".
type AutoCompactionError struct {
	Reason Reason
	Err    error
}

func (e *AutoCompactionError) Error() string {
	if e.Reason == ReasonOverflow {
		return "Context overflow recovery failed: " + e.Err.Error()
	}
	return "Auto-compaction failed: " + e.Err.Error()
}

func (e *AutoCompactionError) Unwrap() error { return e.Err }
