// Package wire is the adapter between the hooks Go types and the generated
// protobuf types of proto/pith/hooks/v1 (the conversions of the events and
// results are generated from the proto with the types, by package wiregen:
// convert_gen.go), plus what both ends of a plugin
// connection must agree on: the go-plugin handshake, the message size limit
// (CheckSize) and the host-API capabilities a call carries (Grants). It is
// shared by the host (internal/pluginhost) and the SDK, whose in-process mode
// calls a handler the way the host calls a subprocess. Generated types stop
// here and in those two packages: everything else speaks hooks types.
package wire
