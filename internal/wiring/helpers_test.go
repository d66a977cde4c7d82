package wiring

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/pith-dev/pith/config"
	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/store/files"
	"github.com/tidwall/gjson"
)

// loadConfig writes cfg as a configuration file and loads it, as a
// command's --config would be.
func loadConfig(t *testing.T, cfg map[string]any) *config.Config {
	t.Helper()
	data, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "pith.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// copyDemo copies the demo session into a temporary directory.
func copyDemo(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("../../examples/demo-session.jsonl")
	if err != nil {
		t.Skipf("demo session: %v", err)
	}
	dst := filepath.Join(t.TempDir(), "demo-session.jsonl")
	if err := os.WriteFile(dst, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return dst
}

// openFile is an OperationOptions.Open of the session file path.
func openFile(path string) func() (session.Backend, func(), error) {
	return func() (session.Backend, func(), error) {
		st, err := files.Open(path, files.Options{})
		if err != nil {
			return nil, nil, err
		}
		return st, func() { st.Close() }, nil
	}
}

// lastCompaction is the last compaction entry of the session file path.
func lastCompaction(t *testing.T, path string) gjson.Result {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var last gjson.Result
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		if e := gjson.ParseBytes(sc.Bytes()); e.Get("type").String() == "compaction" {
			last = e
		}
	}
	if !last.Exists() {
		t.Fatalf("%s has no compaction", path)
	}
	return last
}
