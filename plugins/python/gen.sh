#!/bin/sh
# Generates the Python stubs of proto/pith/hooks/v1/hooks.proto (and the
# options.proto it imports) into DIR
# (default: ./gen beside this script) with Debian's protoc and
# grpc_python_plugin (packages protobuf-compiler, protobuf-compiler-grpc).
# The stubs are not committed: generated here they always match the .proto
# and the protobuf runtime of the same distribution (python3-protobuf).
set -eu
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="${1:-$here/gen}"
mkdir -p "$out"
protoc -I "$root/proto" \
	--python_out="$out" \
	--grpc_out="$out" \
	--plugin=protoc-gen-grpc="$(command -v grpc_python_plugin)" \
	"$root/proto/pith/hooks/v1/hooks.proto" \
	"$root/proto/pith/hooks/v1/options.proto"
# Make the generated tree importable as packages.
for d in "$out/pith" "$out/pith/hooks" "$out/pith/hooks/v1"; do
	: >"$d/__init__.py"
done
