#!/usr/bin/env bash
# fuzz.sh [--list]: runs every fuzz target of the repository, one after the
# other, for FUZZTIME each (default 30s). The targets are found, not listed
# by hand: every `func FuzzX` at the start of a line of a *_test.go file
# (git ls-files, so nothing vendored or generated), so a new target runs
# without anyone remembering to add it. FUZZ=regexp picks targets by name.
# --list prints "package target" and runs nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
go=${GO:-go}
fuzztime=${FUZZTIME:-30s}
only=${FUZZ:-.}

# Flags some targets need, as the Makefile gave them: a bounded
# minimization (their inputs are slow to replay), or one worker (each input
# starts a server, a database round trip or many files).
extra() {
	case $1 in
	FuzzRewriteProtocol) echo "-fuzzminimizetime 100x" ;;
	FuzzAPI) echo "-fuzzminimizetime 10s -parallel 1" ;;
	FuzzFilesRoundTrip | FuzzFilesTail | FuzzPostgresRoundTrip | FuzzURL | FuzzReadAppended) echo "-parallel 1" ;;
	esac
}

targets=$(git ls-files '*_test.go' | xargs grep -H -o '^func Fuzz[A-Za-z0-9_]*' |
	sed -E 's#^(.*)/[^/]*_test\.go:func (Fuzz[A-Za-z0-9_]*)$#./\1 \2#; s#^[^/]*_test\.go:func (Fuzz[A-Za-z0-9_]*)$#. \1#' | sort -u)
[ -n "$targets" ] || { echo "fuzz.sh: no fuzz targets found" >&2; exit 1; }

if [ "${1:-}" = --list ]; then
	echo "$targets"
	exit 0
fi

n=0
while read -r pkg name; do
	[[ $name =~ $only ]] || continue
	n=$((n + 1))
	# shellcheck disable=SC2046 # the extra flags are words
	(set -x; "$go" test -run '^$' -fuzz "^$name\$" -fuzztime "$fuzztime" $(extra "$name") "$pkg")
done <<<"$targets"
echo "fuzz.sh: ran $n fuzz targets for $fuzztime each"
