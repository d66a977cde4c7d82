#!/usr/bin/env bash
# Regenerates the Go code of every .proto under proto/ into internal/gen/,
# and the plugin contract generated from hooks.proto into hooks/,
# internal/wire/ and sdk/ (make proto): the .proto files are public, the
# generated protobuf Go is not.
# The generators are pinned here and installed into a private bin directory
# so the output does not depend on whatever is on the PATH.
set -euo pipefail

BUF_VERSION=v1.75.0
PROTOC_GEN_GO_VERSION=v1.36.12
PROTOC_GEN_GO_GRPC_VERSION=v1.6.0
# The version gRPC itself requires, so that the runtime it generates code
# for (vtprotobuf/protohelpers) is the one already in the module graph.
PROTOC_GEN_GO_VTPROTO_VERSION=v0.6.1-0.20240319094008-0393e58bdf10

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bin="${PITH_TOOLS_BIN:-${XDG_CACHE_HOME:-$HOME/.cache}/pith/tools/bin}"
mkdir -p "$bin"

install() { # module@version binary
	if [[ ! -x "$bin/$2" || ! -f "$bin/.$2.$(basename "$1")" ]]; then
		echo "installing $1" >&2
		GOBIN="$bin" go install "$1"
		rm -f "$bin/.$2."*
		touch "$bin/.$2.$(basename "$1")"
	fi
}
install "github.com/bufbuild/buf/cmd/buf@$BUF_VERSION" buf
install "google.golang.org/protobuf/cmd/protoc-gen-go@$PROTOC_GEN_GO_VERSION" protoc-gen-go
install "google.golang.org/grpc/cmd/protoc-gen-go-grpc@$PROTOC_GEN_GO_GRPC_VERSION" protoc-gen-go-grpc
install "github.com/planetscale/vtprotobuf/cmd/protoc-gen-go-vtproto@$PROTOC_GEN_GO_VTPROTO_VERSION" protoc-gen-go-vtproto

cd "$root"
# The contract generator is part of this module: built fresh every run, so
# that it and its output never disagree.
go build -o "$bin/protoc-gen-pith-hooks" ./internal/wire/cmd/protoc-gen-pith-hooks
PATH="$bin:$PATH" buf lint
PATH="$bin:$PATH" buf generate
