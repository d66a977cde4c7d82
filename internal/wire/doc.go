// Package wire is the adapter between the hooks Go types and the generated
// protobuf types of proto/pith/hooks/v1, plus the go-plugin handshake shared
// by the host (hooks/pluginhost) and the SDK. Generated types stop here and
// in those two packages: everything else speaks hooks types.
package wire
