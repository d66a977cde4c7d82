// Package server implements the SessionService of `pith serve` (the
// long-running host for agents): a registry of open sessions, each an
// engine.Session over a file confined to sessions.root or over a session
// of a store several hosts share (sessions.store); per-session
// serialization of everything that writes; the configured plugins behind
// one dispatch.Dispatcher per session; hot reload of settings, plugins and
// summarizer; Prometheus metrics; and a graceful shutdown that lets running
// operations finish, stops every plugin and closes the files.
//
// It is a package of its own rather than part of cmd/host because cmd/host
// is wiring only (flags, signals, listeners, output): the service has state
// and rules worth testing in-process — confinement, serialization, reload,
// the load test — and the gRPC types stop here and in package client.
//
// Decisions made here:
//
//   - Authentication happens when a call's headers arrive, before gRPC
//     reads its request (gRPC's InTapHandle, auth.go), and the call takes
//     its caller's slot there too; the interceptors (unary and stream)
//     take the call over. Both read the configuration in force on every
//     call: a token removed by a reload is refused on the next call. The caller it establishes (a token's name
//     and session prefix, or a client certificate's subject) travels in the
//     context; Open checks the prefix on the name, every other call on the
//     names the session was opened by (a file reached by two names is one
//     session; each caller is answered with its own name), before
//     touching anything. The interceptor is also where each caller's
//     holds are bounded (slots.go): event streams (server.maxStreams,
//     shared with the viewer's live pages) and other calls in flight
//     (server.maxCallsInFlight, shared with the viewer's requests), a
//     refusal immediate rather than queued. A call is in flight until
//     its answer has left the daemon, not until its handler returns:
//     gRPC keeps an encoded answer until the client reads it, so the
//     answer holds the slot (answer_hold.go) — given back when gRPC
//     frees the answer's last buffer or the connection ends
//     (conn_calls.go) — and a client that reads no answers holds at
//     most server.maxCallsInFlight of them. What a stream sent holds
//     its slot the same way past the stream's end. A connection has at
//     most server.maxCallsInFlight + server.maxStreams streams open
//     (gRPC's default is no bound; a stream lasts until its answer is
//     read). Open bounds with the same counter the sessions each caller
//     opened (its share of server.maxOpenSessions,
//     server.maxOpenSessionsPerCaller).
//   - Connections are bounded below all of this, before any credential,
//     by the listener the daemon serves on (internal/admission:
//     server.maxConnections, server.maxConnectionsPerAddress), and one
//     that has not sent its HTTP/2 preface within server.handshakeTimeout
//     is dropped (GRPCOptions' ConnectionTimeout).
//   - Where sessions live is a source (store/served): the files under
//     sessions.root or a shared store (which reads other hosts' appends
//     before each call). The registry knows names, keys and handles; the
//     engine events between the hosts of a store are relayed here
//     (relay.go).
//   - Errors get their gRPC codes in one place (status.go).
//   - GetContext's large answer refers to the session's messages
//     (read-only bytes the engine shares) instead of copying them into
//     one buffer (answer_codec.go): an answer waiting for its client
//     holds a few bytes per message beside what the session holds
//     anyway, not a copy of the context.
//   - sessions.root is opened once as an os.Root and every file operation
//     goes through it (a session's directory as a sub-root, the store's
//     OpenIn/CreateIn inside), so no name is checked and then opened again.
//   - Sessions are bounded in number (least recently used idle one
//     closed; past a caller's share, its own)
//     and closed when idle; the registry remembers where a closed session
//     lives, so a call naming it reopens it. Size limits are checked before
//     the engine sees the call. A file replaced on disk is detected by
//     comparing the name's inode with the open one at the start of a call.
//   - Every error leaving the daemon passes one interceptor that strips
//     sessions.root's absolute path.
//   - Every append is announced to the session's WatchEvents streams
//     (entries_appended), another writer's once it is read, and so is a
//     rewrite by another program (session_rewritten): a session with
//     a stream has its file followed through the daemon's one file watch
//     (internal/dirwatch, shared with the viewer), or a stored session
//     through the store's watch of every host's changes, which wakes a
//     catch-up under the session's operation lock (follow.go).
//   - Raw entries of every type an agent writes (messages, custom,
//     custom_message, label, model_change, …) go through the engine's
//     AppendEntries, all of one call in one write under the session's
//     operation lock: the live context and the engine's guards stay
//     current, and a call cancelled midway leaves all of its entries or
//     none. compaction and branch_summary entries are written by Compact
//     and Navigate only.
//   - The summarizer is reached through an indirection that a reload
//     swaps, so sessions opened before a reload use the new one; settings
//     are pushed into every open engine with SetSettings, and an operation
//     already running finishes on its snapshot.
//   - Plugin reconciliation runs in the watcher's OnReload: a plugin that
//     fails to start vetoes the new configuration, and the previous plugin
//     set is restored.
//
// NewViewer mounts the viewer package's read-only web viewer for every
// session under the root (server.viewer). It authenticates each request
// with the same check as a gRPC call (check) — a browser's cookie names a
// sign-in (internal/signin) standing for a token's hash, never the token
// — reads through the root
// handle, and is refreshed by the engines' events; it also serves each
// session's last compaction run (LastRun), kept in memory because a run a
// plugin cancelled leaves nothing in the file.
package server
