#!/usr/bin/env bash
# cleantmp.sh COMMAND [ARG...]: runs COMMAND with TMPDIR set to a fresh
# directory and fails, listing them, when it leaves anything there. `make
# test` runs the suite through it, so a test that leaves a socket, a
# browser's profile or a killed process's files behind fails CI instead
# of filling the user's /tmp.
set -uo pipefail

base="${TMPDIR:-/tmp}"
tmp=$(mktemp -d "$base/pith-test.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM
# mktemp makes it 0700. As root, the PostgreSQL tests run the server as
# the postgres user (PostgreSQL refuses root) in a directory below this
# one, which that user must be able to reach (not list): 0711, as /tmp
# lets it.
chmod 0711 "$tmp"

TMPDIR="$tmp" "$@"
status=$?

# What the go command itself keeps in TMPDIR is not the tests': its work
# directories (go-build<digits>, GOTMPDIR defaults to TMPDIR) hold the
# test binaries and are removed when the go command exits. Everything
# else counts, hidden names included.
left=$(find "$tmp" -mindepth 1 -maxdepth 1 ! -name 'go-build[0-9]*' | sort)
if [ -n "$left" ]; then
	echo "FAIL: $1 left $(echo "$left" | wc -l) entries in its TMPDIR (removed now):" >&2
	while IFS= read -r p; do
		echo "  ${p#"$tmp"/}$( [ -d "$p" ] && echo "/: $(find "$p" -mindepth 1 2>/dev/null | head -3 | sed "s|^$p/||" | tr '\n' ' ')")" >&2
	done <<<"$left"
	[ "$status" -ne 0 ] || status=1
fi
exit "$status"
