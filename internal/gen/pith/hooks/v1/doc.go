// Package hooksv1 holds the Go generated from proto/pith/hooks/v1/hooks.proto,
// the wire protocol between Pith and its plugins, and from options.proto,
// which says how its events look as Go types. The .proto file is the
// public contract (plugins in other languages generate their own code from
// it); this Go is plumbing, so it lives under internal/ and only
// internal/wire, internal/pluginhost and sdk import it. Regenerate with
// tools/proto.sh (make proto).
package hooksv1
