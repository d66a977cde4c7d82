package wiring

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/pith-dev/pith/core/engine"
	"github.com/pith-dev/pith/internal/pluginhost"
	"github.com/pith-dev/pith/internal/testproc"
	"github.com/pith-dev/pith/internal/testtmp"
	"github.com/pith-dev/pith/sdk/sdktest"
)

// TestMain keeps the user's describe cache out of the tests: an operation
// without OperationOptions.DescribeCache uses a temporary one.
func TestMain(m *testing.M) {
	cleanup := testtmp.UserDirs()
	code := m.Run()
	cleanup()
	os.Exit(code)
}

// describedCompaction is a compaction with two plugins whose configuration
// lists no events: "tree" handles session_before_tree only, which a
// compaction never fires, "notified" session_compact. Each writes a file
// when its process starts (-dump-env); the test reads which did.
type describedCompaction struct {
	t       *testing.T
	bin     string
	cache   *pluginhost.DescribeCache
	dir     string            // the cache's
	started map[string]string // plugin name → the file its start writes
	closed  string            // failure policy of "tree"
}

func newDescribedCompaction(t *testing.T) *describedCompaction {
	t.Helper()
	built, err := sdktest.BuildTo(t.TempDir(), "github.com/pith-dev/pith/internal/testplugins/scripted")
	if err != nil {
		t.Fatal(err)
	}
	// A copy of its own: the test rewrites it.
	data, err := os.ReadFile(built)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "scripted")
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	dir, cache := t.TempDir(), filepath.Join(t.TempDir(), "describe")
	return &describedCompaction{
		t: t, bin: bin, cache: pluginhost.NewDescribeCache(cache), dir: cache,
		started: map[string]string{"tree": filepath.Join(dir, "tree"), "notified": filepath.Join(dir, "notified")},
		closed:  "open",
	}
}

// run compacts a copy of the demo and returns which plugins started.
func (d *describedCompaction) run() map[string]bool {
	t := d.t
	t.Helper()
	for _, f := range d.started {
		os.Remove(f)
	}
	cfg := loadConfig(t, map[string]any{
		"compaction": map[string]any{"keepRecentTokens": 8000},
		"plugins": []map[string]any{
			{"name": "tree", "path": d.bin, "failure": d.closed,
				"args": []string{"-name", "tree", "-before-tree", "none", "-dump-env", d.started["tree"]}},
			{"name": "notified", "path": d.bin,
				"args": []string{"-name", "notified", "-compact", "record", "-dump-env", d.started["notified"]}},
		},
	})
	op, err := StartOperation(t.Context(), OperationOptions{
		Config: cfg, Fires: engine.CompactEvents, Open: openFile(copyDemo(t)), Logger: hclog.NewNullLogger(),
		HostVersion: "test", DescribeCache: d.cache,
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = op.Engine.Compact(t.Context(), "")
	op.Close()
	if err != nil {
		t.Fatalf("compact: %v", err)
	}
	testproc.RequireNoChildren(t)
	got := map[string]bool{}
	for name, f := range d.started {
		_, err := os.Stat(f)
		got[name] = err == nil
	}
	return got
}

func (d *describedCompaction) expect(got map[string]bool, tree bool, why string) {
	d.t.Helper()
	if got["tree"] != tree || !got["notified"] {
		d.t.Fatalf("%s: started %v, want tree %v and notified", why, got, tree)
	}
}

// TestDescribedPluginNotStartedForUnfiredEvents: a plugin whose
// configuration lists no events is started the first time, to be asked;
// once its binary has said it handles only session_before_tree, a
// compaction leaves it out, while the session_compact plugin still starts.
func TestDescribedPluginNotStartedForUnfiredEvents(t *testing.T) {
	d := newDescribedCompaction(t)
	d.expect(d.run(), true, "first run, nothing known")
	d.expect(d.run(), false, "second run, described")
	d.expect(d.run(), false, "third run")
}

// TestChangedBinaryDescribedAgain: a binary rewritten after it was
// described is another binary: it is started and asked again.
func TestChangedBinaryDescribedAgain(t *testing.T) {
	d := newDescribedCompaction(t)
	d.expect(d.run(), true, "first run")
	f, err := os.OpenFile(d.bin, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Bytes past its end change the file's hash, not what it runs.
	if _, err := f.Write([]byte("another build")); err != nil {
		t.Fatal(err)
	}
	f.Close()
	d.expect(d.run(), true, "binary changed")
	d.expect(d.run(), false, "changed binary described")
}

// TestCorruptDescribeCacheIgnored: a cache file that is not JSON, or that
// another user could have written, is a miss: the plugin starts.
func TestCorruptDescribeCacheIgnored(t *testing.T) {
	for _, tc := range []struct {
		name  string
		spoil func(path string) error
	}{
		{"garbage", func(p string) error { return os.WriteFile(p, []byte("{\"sha256\": garbage"), 0o600) }},
		{"empty", func(p string) error { return os.WriteFile(p, nil, 0o600) }},
		{"writable by others", func(p string) error { return os.Chmod(p, 0o666) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newDescribedCompaction(t)
			d.expect(d.run(), true, "first run")
			d.expect(d.run(), false, "described")
			for _, p := range d256(d.dir) {
				if err := tc.spoil(p); err != nil {
					t.Fatal(err)
				}
			}
			d.expect(d.run(), true, "cache spoiled")
		})
	}
}

// TestClosedPluginStartedWhateverTheCache: a plugin that fails closed is
// never left out on the cache's word: its veto is not skipped because of
// a file.
func TestClosedPluginStartedWhateverTheCache(t *testing.T) {
	d := newDescribedCompaction(t)
	d.closed = "closed"
	d.expect(d.run(), true, "first run")
	d.expect(d.run(), true, "second run")
}

// d256 lists the binary entries (<sha256>.json) of a cache directory.
func d256(dir string) []string {
	all, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	var out []string
	for _, p := range all {
		if len(filepath.Base(p)) == 64+len(".json") {
			out = append(out, p)
		}
	}
	return out
}
