// Package mapfile gives a short-lived reader a file's bytes without
// copying them: mapped read-only where the platform maps files, read into
// memory elsewhere.
//
// A mapping is private and read-only, and it is never unmapped: parsed
// entries point into it for the rest of the process, so it suits a
// command that reads a session, answers and exits (pith context, a dry
// run, tree), not the daemon, which holds sessions for days and rewrites
// them.
//
// The one hazard of a mapping is a file cut shorter while it is mapped:
// reading a page past the new end raises SIGBUS. Session files are not
// cut in place: pi and Pith only append to them, and every rewrite
// (prune, migrate, a compaction's rewrite) writes a new file and renames
// it over the old, which leaves the mapped inode whole. For a tool that
// truncates a session in place under a running command, the readers of
// mapped bytes run under Guard, which turns such a fault into ErrCut —
// the session's parse and the CLI's main goroutine — so the command
// fails with one line instead of a crash. The caller maps only for
// commands that write nothing, so such a failure never interrupts a
// write.
package mapfile
