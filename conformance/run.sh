#!/usr/bin/env bash
# Regenerates every golden file that comes from pi (the conformance oracle).
# Called by `make conformance`. Needs node + npm (and Go for the generated
# sessions); without node it prints a skip line and exits 0.
# CONFORMANCE_NPM_CI=0 skips the `npm ci` step when node_modules is current.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
fixtures="${PI_FIXTURES:-$root/../shared/testdata/pi}"

if ! command -v node >/dev/null 2>&1; then
	echo "conformance: skipped: node not found"
	exit 0
fi
if [ ! -d "$fixtures" ]; then
	echo "conformance: fixtures not found at $fixtures (set PI_FIXTURES)" >&2
	exit 1
fi

cd "$here"
if [ "${CONFORMANCE_NPM_CI:-1}" != "0" ]; then
	npm ci --no-audit --no-fund --silent
fi

cd "$root"
echo "conformance: context + estimates of the pi fixtures"
node conformance/context.mjs \
	--out-context core/session/testdata/golden/pi-fixtures-context.json \
	--out-estimates core/tokens/testdata/golden/pi-fixtures-estimates.json \
	"$fixtures/before-compaction.jsonl" "$fixtures/before-compaction.v3.jsonl" \
	"$fixtures/large-session.jsonl" "$fixtures/large-session.v3.jsonl"

echo "conformance: context + estimates of generated sessions (v1/v2/v3, malformed lines, escapes)"
sgen="core/session/testdata/golden/generated"
rm -f "$sgen"/gen-*.jsonl
go run ./internal/sessiongen/cmd/gensessions -dir "$sgen" -n 16 -min 40 -max 250 -seed 3 -profile branchy \
	-versions 3,3,2,1 -malformed-every 3 -manifest
node conformance/context.mjs --out-context core/session/testdata/golden/pi-generated-context.json \
	--dir-note "core/session/testdata/golden/generated (from this package: testdata/golden/generated)" \
	"$sgen"/gen-*.jsonl
tgen="core/tokens/testdata/golden/generated"
rm -f "$tgen"/gen-*.jsonl
go run ./internal/sessiongen/cmd/gensessions -dir "$tgen" -n 12 -min 100 -max 250 -seed 4 -profile small \
	-escaped 0.35 -odd 0.6 -manifest
node conformance/context.mjs --out-estimates core/tokens/testdata/golden/pi-generated-estimates.json \
	--dir-note "core/tokens/testdata/golden/generated (from this package: testdata/golden/generated)" \
	"$tgen"/gen-*.jsonl

echo "conformance: prepareCompaction"
gen="core/compaction/testdata/generated"
rm -f "$gen"/gen-*.jsonl
go run ./internal/sessiongen/cmd/gensessions -dir "$gen" -n 64 -min 30 -max 300 -seed 1 -profile small -manifest
node conformance/prepare.mjs --manifest "$gen/manifest.json" --fixtures "$fixtures" \
	--out core/compaction/testdata/golden/pi-prepare.json

if [ -f conformance/branch.mjs ]; then
	echo "conformance: branch summaries"
	bgen="core/branch/testdata/generated"
	rm -f "$bgen"/gen-*.jsonl
	go run ./internal/sessiongen/cmd/gensessions -dir "$bgen" -n 36 -min 60 -max 300 -seed 2 -profile branchy -manifest
	node conformance/branch.mjs --manifest "$bgen/manifest.json" --out core/branch/testdata/golden/pi-branch.json
fi
echo "conformance: navigation labels"
node conformance/label.mjs --session examples/demo-session.jsonl --out core/branch/testdata/golden/pi-navigate-label.json
echo "conformance: done"
