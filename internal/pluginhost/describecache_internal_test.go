package pluginhost

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"github.com/pith-dev/pith/hooks"
)

// TestDescribeCacheLookup: what a binary described is found again for the
// same bytes and configuration only: not for other arguments, not once the
// file is rewritten, not from an entry filed under another hash or naming
// an event this host does not know.
func TestDescribeCacheLookup(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("file identities are read on Linux only")
	}
	bin := filepath.Join(t.TempDir(), "plugin")
	if err := os.WriteFile(bin, []byte("a plugin binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "describe")
	c := NewDescribeCache(dir)
	sp := Spec{Name: "p", Path: bin, Args: []string{"-x"}}
	want := []hooks.EventID{hooks.EventBeforeTree}

	if _, key, ok := c.Lookup(sp, "1"); ok {
		t.Fatal("hit in an empty cache")
	} else {
		c.Record(key, want)
	}
	if got, _, ok := c.Lookup(sp, "1"); !ok || !slices.Equal(got, want) {
		t.Fatalf("after Record: %v %v", got, ok)
	}
	other := sp
	other.Args = []string{"-y"}
	if _, _, ok := c.Lookup(other, "1"); ok {
		t.Error("hit for other arguments")
	}
	if _, _, ok := c.Lookup(sp, "2"); ok {
		t.Error("hit for another host version")
	}

	entries, _ := filepath.Glob(filepath.Join(dir, "[0-9a-f]*.json"))
	if len(entries) != 1 {
		t.Fatalf("entries %v", entries)
	}
	data, err := os.ReadFile(entries[0])
	if err != nil {
		t.Fatal(err)
	}
	spoil := func(why string, edit func(*describeEntry)) {
		t.Helper()
		var e describeEntry
		if err := json.Unmarshal(data, &e); err != nil {
			t.Fatal(err)
		}
		edit(&e)
		forged, _ := json.Marshal(e)
		if err := os.WriteFile(entries[0], forged, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, _, ok := c.Lookup(sp, "1"); ok {
			t.Errorf("%s: hit", why)
		}
		if err := os.WriteFile(entries[0], data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	spoil("entry naming another hash", func(e *describeEntry) { e.SHA256 = "00" + e.SHA256[2:] })
	spoil("unknown event", func(e *describeEntry) {
		for k := range e.Variants {
			e.Variants[k] = []string{"session_future"}
		}
	})
	spoil("no events", func(e *describeEntry) {
		for k := range e.Variants {
			e.Variants[k] = nil
		}
	})
	if _, _, ok := c.Lookup(sp, "1"); !ok {
		t.Fatal("restored entry missed")
	}

	if err := os.WriteFile(bin, []byte("another plugin binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := c.Lookup(sp, "1"); ok {
		t.Error("hit for a rewritten binary")
	}
}
