// Package hooksv1 holds the generated Go code of hooks.proto, the wire
// protocol between Pith and its plugins. Regenerate with tools/proto.sh
// (make proto); only internal/wire, hooks/pluginhost and sdk import it.
package hooksv1
