// Package pluginhost is the host side of Pith's out-of-process plugins. A
// Supervisor runs one plugin binary through hashicorp/go-plugin (gRPC only,
// protocol version 1, mutual TLS with per-process P-256 certificates made
// by internal/plugintls, optional sha256 check) — or attaches to one
// running in debug mode (Spec.Reattach) — asks it what it
// handles (Describe), watches its health, restarts it with exponential
// backoff after a crash and disables it once it exhausts its crash budget.
// It serves the host's API to the plugin on a listener of the go-plugin
// broker, whose address Describe carries so that the plugin connects on
// its first host call (hostapi_listen.go), parses the plugin's stderr into
// the host's log, and presents the plugin to the hooks Dispatcher as a
// hooks.Plugin. A Host manages the configured set.
package pluginhost
