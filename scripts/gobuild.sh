#!/usr/bin/env bash
# scripts/gobuild.sh GO ARGS...: runs `GO build -v ARGS...` and, while it
# runs, says every 10 s how far it got. A build with a cold cache
# otherwise prints one line and then nothing for a minute or more, which
# reads as a hang. The compiler's errors pass through as they come; the
# exit status is the build's.
set -uo pipefail
go_cmd=$1
shift
state=$(mktemp -d)
start=$SECONDS
(
	while sleep 10; do
		n=$(cat "$state/n" 2>/dev/null || echo 0)
		last=$(cat "$state/last" 2>/dev/null || true)
		if [ -n "$last" ]; then
			echo "  … $((SECONDS - start)) s: $n packages compiled so far, the last $last" >&2
		else
			echo "  … $((SECONDS - start)) s: still building" >&2
		fi
	done
) &
ticker=$!
cleanup() {
	kill "$ticker" 2>/dev/null
	wait "$ticker" 2>/dev/null
	rm -rf "$state"
}
trap cleanup EXIT
# -v names each package as it is compiled (none when the cache has it);
# every other line is the compiler's and goes to stderr unchanged.
"$go_cmd" build -v "$@" 2>&1 | {
	n=0
	while IFS= read -r line; do
		if [[ $line =~ ^[A-Za-z0-9._~/+-]+$ ]]; then
			n=$((n + 1))
			echo "$n" >"$state/n"
			printf '%s' "$line" >"$state/last"
		else
			printf '%s\n' "$line" >&2
		fi
	done
}
rc=${PIPESTATUS[0]}
if ((SECONDS - start >= 10)); then
	echo "  built in $((SECONDS - start)) s ($(cat "$state/n" 2>/dev/null || echo 0) packages compiled)" >&2
fi
exit "$rc"
