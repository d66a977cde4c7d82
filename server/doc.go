// Package server implements the SessionService of `pith serve` (the
// long-running host for agents): a registry of open sessions, each an
// engine.Session over a file confined to sessions.root; per-session
// serialization of everything that writes; the configured plugins behind
// one hooks.Dispatcher per session; hot reload of settings, plugins and
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
//   - Appending a raw entry of a type that does not contribute to the
//     context (custom, label, model_change, …) goes straight to the store,
//     under the session's operation lock. A custom_message does contribute,
//     and the engine has no way to take one in, so the session's engine is
//     rebuilt from the file afterwards; the engine's per-process memory
//     (the overflow episode, the failure guard, silent overflows) starts
//     over then. compaction and branch_summary entries are written by
//     Compact and Navigate only.
//   - The summarizer is reached through an indirection that a reload
//     swaps, so sessions opened before a reload use the new one; settings
//     are pushed into every open engine with SetSettings, and an operation
//     already running finishes on its snapshot.
//   - Plugin reconciliation runs in the watcher's OnReload: a plugin that
//     fails to start vetoes the new configuration, and the previous plugin
//     set is restored.
package server
