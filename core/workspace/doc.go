// Package workspace reads the files of a session's workspace — the
// directory named by the session header's cwd — for the parts of Pith that
// put current file content into a model's context: the exploring compact
// worker's read_file and mark_read_required tools, and rehydration after a
// compaction.
//
// Every read goes through an os.Root opened on the workspace, so no path
// can leave it: not with "..", not as an absolute path elsewhere, not
// through a symbolic link that points outside. Reads are size-bounded and
// windowed by lines (offset/limit), and binary files are refused, so a
// model asking for the wrong file costs a short error, not the budget.
//
// BuildMessage turns a set of files and references into one custom_message
// draft that fits a token budget; a file that does not fit comes back as
// its path only, so the reader knows it exists and can read it itself.
package workspace
