// Package viewer serves a read-only web page for session files: the entry
// tree, the content of an entry, the context a model would see at any leaf
// drawn to the scale of the context window, and every compaction and branch
// summary. The page follows the file live: the handler watches it with
// fsnotify and tells the page over server-sent events when it changed. A
// session kept elsewhere (a daemon's shared store) has no file to watch:
// its Source gives a Tail to read it and the daemon calls Refresh or
// Reload on the store's events.
//
// A change is read through the Source's Tail: an append costs the lines
// added (and a chain under the leaf only adds rows to the last snapshot),
// a rewrite — a file renamed over the session, a store's rewrite event, or
// lines that no longer end where the last reading did — reads the session
// whole.
//
// Handler serves one session (`pith view`); Sessions serves every session
// a Resolve function admits, each under /s/NAME/, for a daemon to mount
// behind its own listener policy and authentication (`pith serve`'s
// server.viewer), with a daemon panel fed by SessionsOptions.Daemon. Both answer only GET:
// nothing in the viewer changes a session. Sessions watches at most
// MaxOpen sessions (asked at every open: a daemon's server.viewerMaxSessions
// in force); when each has a live page, the callers a daemon names
// (SessionsOptions.Caller) share them fairly, so one caller's pages cannot
// lock the others out. Their bytes together are bounded too (MaxBytes: a
// session held takes about 2.5 times its size in memory), least recently
// used closed first.
//
// Everything the page shows comes from a small JSON API under the same
// handler (api/session, api/tree, api/entry, api/context, api/compactions,
// api/compaction, api/events). The assets are plain HTML, CSS and
// JavaScript embedded in the binary: no build step, no fonts or scripts
// from elsewhere, and a Content-Security-Policy that allows nothing else.
//
// The tree is served a page of rows at a time and the page draws only the
// rows in view, so a 100 000-entry session opens about as fast as the file
// parses.
//
// The hook timeline of a compaction is shown when the entry records one as
// details.hookTimeline: an array of {plugin, event, durationMs, result,
// reason}, which the engine writes for every compaction a plugin was
// called for (with details.reason). Files written before that, or by pi,
// have none, and the page says so.
package viewer
