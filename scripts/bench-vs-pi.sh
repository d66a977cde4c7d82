#!/usr/bin/env bash
# Opens the same generated 100 000-entry session (about 110 MB) with pi 0.73.1
# under Node and with Pith, and prints both times and the ratio. Needs node
# and `cd conformance && npm ci`. Run it on an idle machine: both sides are
# timed by wall clock, best of several runs.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
go run ./internal/sessiongen/cmd/gensessions -dir "$dir" -n 1 -min 100000 -max 100000 -profile benchmark -seed 1 >/dev/null
file="$dir/gen-000.jsonl"
size=$(stat -c %s "$file")
pi_ms=$(node conformance/bench.mjs "$file" 5)
pith_ms=$(go run ./core/session/benchopen "$file" 10)
echo "session: $file ($((size / 1000000)) MB, 100000 entries)"
echo "pi 0.73.1 parse + buildSessionContext: ${pi_ms} ms (best of 5)"
echo "pith Load + NewTree + BuildContext:    ${pith_ms} ms (best of 10)"
awk -v a="$pi_ms" -v b="$pith_ms" 'BEGIN { printf "pith is %.1fx faster\n", a / b }'
