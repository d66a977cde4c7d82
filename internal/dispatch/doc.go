// Package dispatch is the host's side of the plugin contract (package
// hooks): the Dispatcher that calls plugins and combines their results —
// ordering by priority then configuration order, a deadline on every call,
// the failure policy (open or closed) — the limits checks on what plugins
// send (CheckBeforeCompactResult, …) and the bounds on what they are sent
// (BoundBeforeCompact), validation of supplied compactions and summaries,
// the Timeline an operation records its calls in, and ScopedHost, the
// capability through which a call reaches the host's API.
//
// It is apart from hooks because none of it is the contract: a plugin
// author never names it, and the host may change it without a plugin
// noticing. Being internal, no other module can come to depend on it.
//
// In-process handlers (NewPlugin, sdk.StartInProcess) and out-of-process
// plugins (package internal/pluginhost) both present themselves as a
// hooks.Plugin, so the Dispatcher treats them alike.
package dispatch
