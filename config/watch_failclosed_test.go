package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// pluginsYAML is a configuration whose plugins come last: a redaction
// plugin that fails closed and is pinned by its checksum, then an audit
// plugin that fails open. keep tells one full save from another.
func pluginsYAML(dir string, keep int) string {
	return keepYAML(keep) + fmt.Sprintf(`plugins:
  - name: redact
    path: %s
    failure: closed
    sha256: %s
  - name: audit
    path: %s
`, filepath.Join(dir, "redact"), hexSum("redact"), filepath.Join(dir, "audit"))
}

// TestWatcherPartialSaveKeepsFailClosedPlugins: a save stopped before
// plugins:, after the fail-closed plugin's path (so it would take the
// default, failure open) or before its sha256 leaves a valid file that
// drops or weakens the plugin the operator said the work cannot go on
// without. Each is refused and the plugin stays in force; the whole file
// then reloads.
func TestWatcherPartialSaveKeepsFailClosedPlugins(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, name := range []string{"redact", "audit"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	full := pluginsYAML(dir, 1000)
	path := writeFile(t, dir, "pith.yaml", full)
	h := startWatcher(t, dir, path, WatcherOptions{})
	before := h.store.Snapshot()
	if len(before.Plugins) != 2 {
		t.Fatalf("start: %d plugins", len(before.Plugins))
	}
	cuts := []struct{ name, content, says string }{
		{"before plugins:", cutBefore(t, full, "plugins:"), "plugin redact, which fails closed, would be removed"},
		{"after redact's path", cutBefore(t, full, "    failure: closed"), "plugin redact would fail open instead of closed"},
		{"before redact's sha256", cutBefore(t, full, "    sha256:"), "plugin redact, which fails closed, would no longer be checked against its sha256"},
	}
	for _, c := range cuts {
		stoppedSave(t, path, c.content)
		r := h.waitFor("the refusal of a save stopped "+c.name, func(r Result) bool {
			return r.Err != nil && errors.Is(r.Err, ErrRestartNeeded)
		})
		if !strings.Contains(r.Err.Error(), c.says) {
			t.Errorf("%s: the refusal does not say %q: %v", c.name, c.says, r.Err)
		}
		if h.store.Snapshot() != before {
			t.Fatalf("%s: the configuration in force changed", c.name)
		}
	}
	// Cut after the fail-closed plugin: only audit, which fails open, is
	// lost; that is a change a reload may make (an operator removing a
	// plugin does the same).
	stoppedSave(t, path, strings.Replace(cutBefore(t, full, "  - name: audit"), "1000", "1500", 1))
	if r := h.waitApplied(1500); len(r.Change.New.Plugins) != 1 {
		t.Fatalf("plugins after audit was cut: %+v", r.Change.New.Plugins)
	}
	stoppedSave(t, path, pluginsYAML(dir, 2000))
	if r := h.waitApplied(2000); len(r.Change.New.Plugins) != 2 {
		t.Fatalf("plugins after the whole save: %+v", r.Change.New.Plugins)
	}
}
