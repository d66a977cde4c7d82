package config

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func hexSum(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// tenantYAML is a daemon's configuration with two tenants' tokens, a
// workspace root and a sessions root under dir, in the order the cuts
// below need: sessions.root comes last, so a file cut anywhere before
// its end moves the sessions.
func tenantYAML(dir string, keep int, tokens ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Pith daemon configuration\n# (tenants below)\n%s", keepYAML(keep))
	fmt.Fprintf(&b, "server:\n  workspaceRoot: %s\n  tokens:\n", filepath.Join(dir, "ws"))
	for _, tok := range tokens {
		fmt.Fprintf(&b, "    - name: %s\n      sha256: %s\n      prefix: %s/\n", tok, hexSum(tok), tok)
	}
	fmt.Fprintf(&b, "sessions:\n  root: %s\n", filepath.Join(dir, "sessions"))
	return b.String()
}

// stoppedSave is a save that truncates the file and then stops: an editor
// writing in place, `cat new > pith.yaml`, a copy cut short by a full
// disk. What it leaves is a prefix of the new content, for good.
func stoppedSave(t *testing.T, path, prefix string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(prefix); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// cutBefore is full up to (not including) the first occurrence of mark.
func cutBefore(t *testing.T, full, mark string) string {
	t.Helper()
	i := strings.Index(full, mark)
	if i < 0 {
		t.Fatalf("%q not in the configuration", mark)
	}
	return full[:i]
}

// TestWatcherPartialSaves: saves stopped empty, in the header comments,
// before `tokens:`, in the middle of a token and after the tokens leave a
// prefix of the file that today reads as a valid configuration (every
// default from the cut on: no tokens, the default roots) or an invalid
// one. Each is refused with one log line and the configuration in force
// stays; the whole file saved in place, by rename and vim-style then
// reloads as before, a rotated token list included.
func TestWatcherPartialSaves(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	full := tenantYAML(dir, 1000, "team-a", "team-b")
	path := writeFile(t, dir, "pith.yaml", full)
	h := startWatcher(t, dir, path, WatcherOptions{})
	before := h.store.Snapshot()
	if len(before.Server.Tokens) != 2 {
		t.Fatalf("start: %d tokens", len(before.Server.Tokens))
	}
	var (
		mu      sync.Mutex
		applied []Change
	)
	h.store.Subscribe(func(ch Change) {
		mu.Lock()
		defer mu.Unlock()
		applied = append(applied, ch)
	})

	cuts := []struct {
		name, content string
		want          error
		says          []string
	}{
		{"empty", "", ErrEmpty, nil},
		{"in the header comments", cutBefore(t, full, "(tenants"), ErrEmpty, nil},
		{"before tokens:", cutBefore(t, full, "  tokens:"), ErrRestartNeeded,
			[]string{"remove authentication", "every server.tokens entry (2 in force)", "sessions.root would change"}},
		{"in the middle of a token", cutBefore(t, full, hexSum("team-a")[40:]), ErrInvalid, []string{"server.tokens[0].sha256"}},
		{"in the middle of a token name", cutBefore(t, full, "m-b\n"), ErrInvalid, []string{"server.tokens[1]"}},
		{"after the tokens", cutBefore(t, full, "sessions:"), ErrRestartNeeded, []string{"sessions.root would change"}},
		{"in the middle of sessions.root", cutBefore(t, full, "sessions\n"), ErrRestartNeeded, []string{"sessions.root would change"}},
	}
	for _, c := range cuts {
		stoppedSave(t, path, c.content)
		// The truncation may be read on its own first (an empty file,
		// refused too): wait for this cut's answer.
		r := h.waitFor("the refusal of a save stopped "+c.name, func(r Result) bool {
			return r.Err != nil && errors.Is(r.Err, c.want) && !errors.Is(r.Err, ErrUnsettled)
		})
		for _, s := range c.says {
			if !strings.Contains(r.Err.Error(), s) {
				t.Errorf("%s: the refusal does not say %q: %v", c.name, s, r.Err)
			}
		}
		if h.store.Snapshot() != before {
			t.Fatalf("%s: the configuration in force changed", c.name)
		}
	}
	if logs := h.logs.String(); strings.Contains(logs, "config reloaded") {
		t.Fatalf("a partial file was applied:\n%s", logs)
	}
	mu.Lock()
	if len(applied) != 0 {
		t.Fatalf("%d partial configurations applied, the first with %d tokens", len(applied), len(applied[0].New.Server.Tokens))
	}
	mu.Unlock()
	if strings.Contains(h.logs.String(), hexSum("team-a")) {
		t.Error("a refusal logged a token's hash")
	}

	// The whole file, as each kind of save writes it.
	stoppedSave(t, path, tenantYAML(dir, 2000, "team-a", "team-b"))
	h.waitApplied(2000)
	tmp := writeFile(t, dir, ".pith.yaml.tmp", tenantYAML(dir, 3000, "team-a", "team-b"))
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	h.waitApplied(3000)
	// vim: the old file renamed to a backup, the new one written, the
	// backup removed; and the tokens rotated (team-b replaced by team-c).
	if err := os.Rename(path, path+"~"); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "pith.yaml", tenantYAML(dir, 4000, "team-a", "team-c"))
	if err := os.Remove(path + "~"); err != nil {
		t.Fatal(err)
	}
	r := h.waitApplied(4000)
	if got := r.Change.New.Server.Tokens; len(got) != 2 || got[1].Name != "team-c" {
		t.Fatalf("rotated tokens: %+v", got)
	}
}

// TestWatcherSaveInProgress: a save caught between two of its writes,
// where what is written so far is a valid configuration the reload rules
// allow (the first tenant's token complete, the second's not yet
// written), is not applied: the second read, a debounce later, differs.
// The writes that made it differ bring the reload of the whole file.
func TestWatcherSaveInProgress(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// Tokens last: a prefix ending after team-a's entry keeps the roots.
	tokensLast := func(keep int, tokens ...string) string {
		var b strings.Builder
		b.WriteString(keepYAML(keep))
		fmt.Fprintf(&b, "sessions:\n  root: %s\nserver:\n  tokens:\n", filepath.Join(dir, "sessions"))
		for _, tok := range tokens {
			fmt.Fprintf(&b, "    - name: %s\n      sha256: %s\n      prefix: %s/\n", tok, hexSum(tok), tok)
		}
		return b.String()
	}
	path := writeFile(t, dir, "pith.yaml", tokensLast(1000, "team-a", "team-b"))
	h := startWatcher(t, dir, path, WatcherOptions{})
	full := tokensLast(2000, "team-a", "team-b")
	partial := cutBefore(t, full, "    - name: team-b")
	if _, err := Parse([]byte(partial), path, noEnv); err != nil {
		t.Fatalf("the partial file must be a valid configuration for this test: %v", err)
	}

	firstReads := make(chan []byte)
	proceed := make(chan struct{})
	var done sync.Once
	finished := make(chan struct{})
	h.watcher.mu.Lock()
	h.watcher.betweenReads = func(data []byte) {
		select {
		case <-finished:
			return
		default:
		}
		firstReads <- data
		<-proceed
	}
	h.watcher.mu.Unlock()

	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(partial); err != nil {
		t.Fatal(err)
	}
	// Hold the save at the partial file until a reload has read it once;
	// then write the rest before that reload reads again.
	for {
		data := <-firstReads
		if string(data) != partial {
			proceed <- struct{}{} // the truncation alone: let it be
			continue
		}
		if _, err := f.WriteString(full[len(partial):]); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		done.Do(func() { close(finished) })
		proceed <- struct{}{}
		break
	}
	r := h.waitFor("the outcome of the reload that read the partial file", func(r Result) bool {
		return r.Applied || errors.Is(r.Err, ErrUnsettled)
	})
	if r.Applied {
		t.Fatalf("the reload that read the partial file applied a configuration (%d tokens) without reading it settled", len(r.Change.New.Server.Tokens))
	}
	if got := h.store.Snapshot(); got.Compaction.KeepRecentTokens != 1000 || len(got.Server.Tokens) != 2 {
		t.Fatalf("the partial file was applied: %d tokens", len(got.Server.Tokens))
	}
	r = h.waitApplied(2000)
	if n := len(r.Change.New.Server.Tokens); n != 2 {
		t.Fatalf("applied with %d tokens, want 2", n)
	}
	if c := strings.Count(h.logs.String(), "config file is being written"); c != 1 {
		t.Errorf("the save in progress was logged %d times, want once:\n%s", c, h.logs.String())
	}
}

// TestWatcherPartialSaveKeepsPrefixes: with sessions first (as in the
// examples), a save stopped right after a token's sha256, before its
// prefix, is a valid configuration that would give that tenant every
// session; it is refused, and the tenant keeps its prefix.
func TestWatcherPartialSaveKeepsPrefixes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	content := func(keep int) string {
		return fmt.Sprintf("%ssessions:\n  root: %s\nserver:\n  tokens:\n"+
			"    - name: team-a\n      sha256: %s\n      prefix: team-a/\n"+
			"    - name: team-b\n      sha256: %s\n      prefix: team-b/\n",
			keepYAML(keep), filepath.Join(dir, "sessions"), hexSum("team-a"), hexSum("team-b"))
	}
	path := writeFile(t, dir, "pith.yaml", content(1000))
	h := startWatcher(t, dir, path, WatcherOptions{})
	before := h.store.Snapshot()
	full := content(2000)
	partial := cutBefore(t, full, "      prefix: team-b/")
	stoppedSave(t, path, partial)
	r := h.waitFor("the refusal", func(r Result) bool {
		return r.Applied || r.Err != nil && !errors.Is(r.Err, ErrUnsettled) && !errors.Is(r.Err, ErrEmpty)
	})
	if r.Applied {
		t.Fatalf("applied: team-b's prefix is now %q", r.Change.New.Server.Tokens[1].Prefix)
	}
	if !errors.Is(r.Err, ErrRestartNeeded) || !strings.Contains(r.Err.Error(), "server.tokens[1] (team-b), which would reach every session") {
		t.Fatalf("want the widening refused, got %v", r.Err)
	}
	if h.store.Snapshot() != before {
		t.Fatal("the configuration in force changed")
	}
	stoppedSave(t, path, full)
	h.waitApplied(2000)
}

// TestOpenRefusesEmpty: a process started while a save has truncated its
// configuration does not run on the defaults.
func TestOpenRefusesEmpty(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, content := range map[string]string{"empty": "", "blank": "\n  \n", "comments only": "# Pith\n# more\n"} {
		path := writeFile(t, dir, "pith.yaml", content)
		if _, _, err := Open(path, WatcherOptions{LoadOptions: []Option{noEnv}}); !errors.Is(err, ErrEmpty) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: %v, want ErrEmpty naming the file", name, err)
		}
	}
	// A file setting anything opens.
	if _, w, err := Open(writeFile(t, dir, "pith.yaml", "logging:\n  level: warn\n"), WatcherOptions{LoadOptions: []Option{noEnv}}); err != nil {
		t.Fatal(err)
	} else {
		w.Close()
	}
}
