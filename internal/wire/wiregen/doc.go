// Package wiregen generates the Go plugin contract from hooks.proto: the
// event and result types and event ids of package hooks, their conversions
// to and from the protobuf messages in internal/wire, and the documented
// aliases of package sdk. The proto is the one definition of every event;
// options.proto says how its messages look in Go. It runs as the protoc
// plugin protoc-gen-pith-hooks (make proto).
package wiregen
