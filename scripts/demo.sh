#!/usr/bin/env bash
# The tour on the bundled demo session: no network, no keys. It works on a
# copy, so the bundled file stays as it is.
set -euo pipefail
cd "$(dirname "$0")/.."
pith=./bin/pith
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp examples/demo-session.jsonl "$work/session.jsonl"
s="$work/session.jsonl"

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

step "The entry tree: branches, labels, the current leaf"
$pith tree "$s"

step "The context a model would see, and its tokens"
$pith context "$s"

step "The same as one JSON object"
$pith context "$s" --json
