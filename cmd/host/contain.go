package main

import "github.com/pith-dev/pith/internal/proctree"

// containPlugins makes the pith process the child subreaper of its
// plugins' processes (Linux): a process a plugin starts that leaves the
// plugin's process group and whose parent exits — a double fork — is
// re-parented to pith instead of init, and ended when a plugin stops
// (proctree.EndOrphans). pith starts no process but its plugins, which
// proctree requires of a subreaper. It takes effect as the first plugin
// starts: a command that starts none (pith --version, pith context) does
// not pay for it, about 0.8 ms of CPU. Call it first thing in main.
func containPlugins() { proctree.SubreapOnFirstStart() }
