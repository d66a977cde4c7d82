#!/usr/bin/env bash
# Runs pi 0.73.1 (under Node) and Pith on the same generated 100 000-entry
# session (about 110 MB) and prints both times and the ratios: opening the
# session and building its context, and preparing a compaction. Needs node
# and `cd conformance && npm ci`. Run it on an idle machine: both sides are
# timed by wall clock, best of several runs.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
go run ./internal/sessiongen/cmd/gensessions -dir "$dir" -n 1 -min 100000 -max 100000 -profile benchmark -seed 1 -compaction 0 >/dev/null
go build -o "$dir/benchopen" ./internal/benchopen
file="$dir/gen-000.jsonl"
echo "session: $(( $(stat -c %s "$file") / 1000000 )) MB, 100000 entries"
for mode in open prepare; do
	pi_ms=$(node conformance/bench.mjs "$mode" "$file" 3)
	pith_ms=$("$dir/benchopen" "$mode" "$file" 10)
	awk -v m="$mode" -v a="$pi_ms" -v b="$pith_ms" 'BEGIN { printf "%-8s pi %9.1f ms   pith %8.2f ms   %6.1fx\n", m, a, b, a / b }'
done
