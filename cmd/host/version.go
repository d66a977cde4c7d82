package main

import (
	"runtime/debug"
	"strings"
)

// version is the host's version, printed by --version and sent to plugins.
var version = buildVersion()

// buildVersion reads the module version and the VCS revision the Go
// toolchain stamped into the binary: "v1.2.3", or "(devel)" for a build
// from a checkout, followed by the revision (with "+dirty" for uncommitted
// changes) and its commit time when known.
func buildVersion() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown)"
	}
	return formatVersion(info)
}

func formatVersion(info *debug.BuildInfo) string {
	v := info.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev, when string
	var dirty bool
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			when = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	var extra []string
	if rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if dirty {
			rev += "+dirty"
		}
		extra = append(extra, rev)
	}
	if when != "" {
		extra = append(extra, when)
	}
	if len(extra) == 0 {
		return v
	}
	return v + " (" + strings.Join(extra, ", ") + ")"
}
