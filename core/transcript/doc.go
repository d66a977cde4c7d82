// Package transcript renders a conversation the two ways the core hands it
// on: as the messages a model is sent (ConvertForLLM: summaries framed as
// user text, bash runs spelled out) and as the plain-text transcript a
// summarizer reads (SerializeConversation, FitConversation to make it fit
// an input window). It also collects the files a conversation read and
// modified (FileOps) and renders those lists for a summary.
//
// Compaction and branch summaries both build their prompts from it, which
// is why it is a package of its own rather than part of either; the
// built-in summarizer reads message contents through ContentText too. It
// does no I/O and links no network code.
package transcript
