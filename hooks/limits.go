package hooks

// Limits bound what one plugin may send the host and be sent by it. A
// result over a limit is a failure of the plugin under its failure policy,
// and the log names the limit. Sizes are in bytes. A zero field means the
// host's default.
type Limits struct {
	// ContextBytes bounds the total of a session.compacting result's
	// context lines; PromptBytes its prompt, and the instructions, label
	// and cancel reason of any result.
	ContextBytes int
	PromptBytes  int
	// SummaryBytes bounds a supplied compaction's summary and short
	// summary, and a supplied branch summary.
	SummaryBytes int
	// PreserveDataBytes and DetailsBytes bound those JSON values;
	// JSONDepth bounds their nesting.
	PreserveDataBytes int
	DetailsBytes      int
	JSONDepth         int
	// PathEntriesBytes bounds the raw entries sent with
	// session_before_compact and session_before_tree: past it the newest
	// that fit are sent and the event is marked truncated. The labels of
	// session_before_compact share it. It also bounds one host-API
	// ReadEntries answer (at least 1 MiB; a page holds at least one
	// entry): an answer the plugin leaves unread stays in the host's
	// memory.
	PathEntriesBytes int
	// MessagesBytes bounds the messages sent with session_before_compact
	// (messages to summarize and turn-prefix messages together): past it
	// the newest that fit are sent and Preparation.MessagesTruncated is
	// set.
	MessagesBytes int
	// CompletePromptBytes bounds a host-API completion's prompt and system
	// prompt together; CompleteMaxTokens caps its output tokens.
	CompletePromptBytes int
	CompleteMaxTokens   int
	// EstimateBytes bounds the messages of one host-API token estimate.
	EstimateBytes int
	// CompleteCalls bounds the host-API completions one plugin call may
	// make (each is a request to the host's model, on its account);
	// HostCallsInFlight the host-API calls it may have running at once
	// (each may hold its request and answer in the host's memory; a call
	// is counted from its headers, before its request is read). Past
	// either, a call is refused at once. A host-API connection leaving
	// HostCallsInFlight × PathEntriesBytes of answers unread has its calls
	// refused too.
	CompleteCalls     int
	HostCallsInFlight int
	// Stderr relay: lines and bytes a second, and the longest line kept.
	StderrLinesPerSecond int
	StderrBytesPerSecond int
	StderrLineBytes      int
}
