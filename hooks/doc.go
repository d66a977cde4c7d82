// Package hooks owns the five hook events of docs/behaviour.md §13 as plain Go types, their
// stable event IDs, the handler interfaces a plugin implements, and the
// Dispatcher that calls plugins and combines their results: ordering by
// priority then configuration order, a deadline on every call, the failure
// policy (open or closed), and validation of what plugins supply.
//
// In-process handlers and out-of-process plugins (package internal/pluginhost)
// both present themselves as a Plugin, so the Dispatcher treats them alike.
// Session entries and messages travel as their original JSON bytes
// (json.RawMessage): hooks never decodes them, the engine converts.
package hooks
