// Package viewer serves a read-only web page for one session file: the entry
// tree, the content of an entry, the context a model would see at any leaf
// drawn to the scale of the context window, and every compaction and branch
// summary. The page follows the file live: the handler watches it with
// fsnotify and tells the page over server-sent events when it changed.
//
// Everything the page shows comes from a small JSON API under the same
// handler (api/session, api/tree, api/entry, api/context, api/compactions,
// api/events), so `pith view` and a daemon can mount one http.Handler. The
// assets are plain HTML, CSS and JavaScript embedded in the binary: no build
// step, no fonts or scripts from elsewhere.
//
// The tree is served a page of rows at a time and the page draws only the
// rows in view, so a 100 000-entry session opens as fast as a small one.
package viewer
