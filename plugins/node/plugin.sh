#!/bin/sh
# Starts the Node.js plugin; point the host's plugin path at this file.
# `exec` keeps one process, so the host's signals and exit checks reach node.
exec node "$(dirname "$0")/plugin.js" "$@"
