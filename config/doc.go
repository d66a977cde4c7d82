// Package config owns Pith's configuration (docs/behaviour.md §14): the typed Config with
// its reference defaults, loading with koanf (defaults, then one YAML, TOML or
// JSON file, then PITH_ environment overrides), whole-configuration
// validation, secret masking for display, the Store that publishes immutable
// snapshots through an atomic pointer, and the Watcher that hot-reloads the
// file when it changes on disk or on SIGHUP.
//
// A *Config returned by Load or held by a Store is a snapshot: nothing
// mutates it after loading, so an operation that started on one snapshot
// finishes on it even while a reload swaps a new one in. Callers must treat
// it as read-only too (use Clone for a private copy).
//
// # Files
//
// The format follows the extension: .yaml/.yml, .toml, .json (.jsonc).
// JSON files may carry // and /* */ comments. Unknown keys, duplicate keys
// and values of the wrong type are errors naming the key; keys left out
// keep their defaults, and so do keys of a plugin entry left out of it.
// Relative plugin paths and sessions.root are resolved against the file's
// directory. See examples/ for every key with its default.
//
// # Environment overrides
//
// A variable PITH_<SECTION>__<KEY>[__<KEY>...] sets one key: the prefix is
// cut, double underscores separate levels, and each level is matched against
// the known keys ignoring case and single underscores, so
// PITH_COMPACTION__KEEPRECENTTOKENS and PITH_COMPACTION__KEEP_RECENT_TOKENS
// both set compaction.keepRecentTokens. List values are comma-separated
// (PITH_PRUNING__PROTECTEDTOOLS=skill,read). The plugin list and the
// summarizer candidates cannot be set from the environment. Variables whose
// first level names no configuration section (PITH_CONFIG, for instance) are
// left alone for other uses; one that starts like a section but does not
// resolve to a key is an error, so a typo never passes silently.
package config
