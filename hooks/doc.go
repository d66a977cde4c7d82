// Package hooks is the plugin contract: the five hook events of
// docs/behaviour.md §13 and their results as plain Go types, their stable
// event IDs, the handler interfaces (and Funcs) a plugin implements, the
// HostAPI a plugin may call back into, the errors a plugin sees, and the
// vocabulary the host answers in (a Plugin and its PluginInfo and Limits,
// the combined outcomes, the hook timeline a compaction entry records).
//
// Plugin authors use it through package sdk, which re-exports these types;
// the host (core/engine, internal/dispatch, internal/pluginhost,
// internal/wire) imports it directly. It holds no host machinery: the
// dispatcher that calls plugins, the result checks and the scoped host API
// are in internal/dispatch, so that this package stays small and stable
// for the plugins built against it.
//
// Session entries and messages travel as their original JSON bytes
// (json.RawMessage): hooks never decodes them, the engine converts.
package hooks
