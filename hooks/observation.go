package hooks

import "time"

// What became of each plugin call, as the host reports it to its metrics
// (Observation) and records it in a compaction or branch summary entry
// (TimelineStep, the Result constants). The recorder itself is
// internal/dispatch's Timeline.

// Outcome classifies one plugin call for observation.
type Outcome string

// Call outcomes.
const (
	OutcomeOK       Outcome = "ok"       // returned normally (possibly no result)
	OutcomeError    Outcome = "error"    // returned an error or crashed
	OutcomeTimeout  Outcome = "timeout"  // outlived its deadline
	OutcomePanic    Outcome = "panic"    // an in-process handler panicked
	OutcomeRejected Outcome = "rejected" // result failed validation
	OutcomeAborted  Outcome = "aborted"  // the operation was cancelled meanwhile
)

// Observation describes one finished plugin call.
type Observation struct {
	Event    EventID
	Plugin   string
	Duration time.Duration
	Outcome  Outcome
	Err      error
	// Result is what the call came to for the operation (a Result*
	// constant, or several joined by " + " such as "context lines +
	// prompt"); Reason is the plugin's cancel reason, or the failure and
	// the policy applied to it.
	Result string
	Reason string
}

// Results of a plugin call, as a hook timeline shows them: what the call
// came to for the operation, not only whether it returned.
const (
	ResultNoOpinion  = "no opinion"          // returned nothing the operation used
	ResultCancel     = "cancel"              // cancelled the operation; Reason says why
	ResultCompaction = "compaction supplied" // session_before_compact supplied the compaction
	ResultSummary    = "summary supplied"    // session_before_tree supplied the summary
	ResultNotified   = "notified"            // a notification (session_compact, session_tree) was delivered
	ResultRejected   = "rejected"            // the result failed validation and was skipped
	ResultFailure    = "failure"             // failed; Reason says how and which policy applied
	ResultAborted    = "aborted"             // the operation was cancelled meanwhile
)

// TimelineStep is one plugin call of an operation's hook timeline, in the
// form a compaction or branch summary entry stores it as
// details.hookTimeline.
type TimelineStep struct {
	Plugin     string  `json:"plugin"`
	Event      EventID `json:"event"`
	DurationMs float64 `json:"durationMs"`
	Result     string  `json:"result"`
	Reason     string  `json:"reason,omitempty"`
}
