#!/usr/bin/env bash
# The tour on the bundled demo session, with all five example plugins
# attached: no network, no keys, the built-in summarizer. It works on copies
# in a temporary directory, so the bundled file stays as it is, and it checks
# at the end that no plugin process is left running.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
pith="$root/bin/pith"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

bold=$'\033[1m' dim=$'\033[2m' off=$'\033[0m'
[ -t 1 ] || { bold='' dim='' off=''; }
step() { printf '\n%s== %s%s\n' "$bold" "$*" "$off"; }
run() { printf '%s$ %s%s\n' "$dim" "$*" "$off"; "$@"; }

# A project directory with standing instructions for instructions-keeper.
mkdir -p "$work/project"
cat > "$work/project/AGENTS.md" <<'MD'
# Working agreements
- Run `go test ./...` before saying a change is done.
- Never change the public API of internal/csvimport.
- Report output must stay byte-identical; golden files live in internal/report/testdata.
MD

# Each plugin lists the events it handles, so a command starts only the
# plugins of the events it fires: compact does not start branch-notes,
# navigate starts only branch-notes and audit.
plugin() { # name priority timeout events [args...]
	local name=$1 prio=$2 timeout=$3 events=$4; shift 4
	printf '  - name: %s\n    path: %s/bin/plugins/%s\n    priority: %s\n    timeout: %s\n    events: [%s]\n' "$name" "$root" "$name" "$prio" "$timeout" "$events"
	[ $# -gt 0 ] && printf '    args: [%s]\n' "$(printf '"%s", ' "$@" | sed 's/, $//')"
	return 0
}
{
	echo "plugins:"
	plugin guard 10 5s session_before_compact
	plugin enterprise-summarizer 20 60s session_before_compact
	plugin instructions-keeper 50 5s session.compacting --dir "$work/project"
	plugin branch-notes 50 5s session_before_tree
	# ./ is the configuration file's directory, wherever pith runs from.
	plugin audit 100 5s "session_compact, session_tree" --file ./audit.jsonl
} > "$work/all.yaml"
# The same without enterprise-summarizer, so the default summary runs and
# session.compacting (instructions-keeper) is called.
awk '/name: enterprise-summarizer/{skip=5} skip>0{skip--; next} {print}' "$work/all.yaml" > "$work/keeper.yaml"

cp examples/demo-session.jsonl "$work/session.jsonl"
cp examples/demo-session.jsonl "$work/session2.jsonl"
s="$work/session.jsonl"
leaf=$(tail -n 1 "$s" | sed 's/.*"id":"\([0-9a-f]\{8\}\)".*/\1/')

step "The bundled session: a tree with an abandoned branch, labels and the current leaf"
run "$pith" tree "$s"

step "Its context: what the model would see, and the tokens it costs"
run "$pith" context "$s" | tail -n 4

step "The five example plugins: handshake, version, events"
run "$pith" plugins check --config "$work/all.yaml"

step "guard: while a no-compact label is on the path, compaction is refused"
run "$pith" label "$s" "$leaf" no-compact
run "$pith" compact "$s" --config "$work/all.yaml" --keep-recent-tokens 8000 || true

step "enterprise-summarizer: redacts secrets, then writes the compaction with the host's summarizer"
run "$pith" label "$s" "$leaf" --clear
run "$pith" compact "$s" --config "$work/all.yaml" --keep-recent-tokens 8000 --verbose 2>&1 |
	grep -E 'compacted:|summary supplied|redact' | sed 's/^.*\(compacted:\)/\1/'
run "$pith" context "$s" | tail -n 3

step "branch-notes: navigating back to the branch point, the abandoned branch is summarized without a model"
branch_point=$("$pith" tree "$s" --json | sed 's/},{/}\n{/g' | grep -B1 '"depth":1' | head -n 1 | sed 's/.*"id":"\([0-9a-f]\{8\}\)".*/\1/')
run "$pith" navigate "$s" --to "$branch_point" --summarize --config "$work/all.yaml"
run "$pith" context "$s" | tail -n 4

step "instructions-keeper: with no plugin summarizer attached, the default summary keeps AGENTS.md"
run "$pith" compact "$work/session2.jsonl" --config "$work/keeper.yaml" --keep-recent-tokens 8000 |
	sed -n '/## Constraints/,/## Progress/p' | head -n 12

step "audit: one JSON line per saved compaction and navigation"
run cat "$work/audit.jsonl"

step "No plugin process is left running"
if pgrep -f "$root/bin/plugins/" >/dev/null; then
	echo "plugin processes still running:" >&2
	pgrep -af "$root/bin/plugins/" >&2
	exit 1
fi
echo "none"
