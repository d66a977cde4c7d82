package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

func TestRun(t *testing.T) {
	dir := t.TempDir()
	err := run([]string{"-dir", dir, "-n", "3", "-min", "20", "-max", "40", "-seed", "5",
		"-profile", "branchy", "-versions", "3,1", "-malformed-every", "2", "-manifest"})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Files) != 3 {
		t.Fatalf("manifest lists %d files", len(m.Files))
	}
	wantVersion := []int{3, 1, 3}
	for i, f := range m.Files {
		if _, err := os.Stat(filepath.Join(dir, f.File)); err != nil {
			t.Errorf("%s: %v", f.File, err)
		}
		if f.Options.Version != wantVersion[i] || f.Options.TornTail != (i == 1) {
			t.Errorf("%s: version %d torn %v", f.File, f.Options.Version, f.Options.TornTail)
		}
		if f.Entries < 20 || f.Entries > 40 || len(f.KeepRecentTokens) == 0 {
			t.Errorf("%s: entries %d keeps %v", f.File, f.Entries, f.KeepRecentTokens)
		}
	}
}

func TestRunErrors(t *testing.T) {
	tests := [][]string{
		{},
		{"-dir", t.TempDir(), "-min", "10", "-max", "5"},
		{"-dir", t.TempDir(), "-profile", "nope"},
		{"-dir", t.TempDir(), "-versions", "x"},
		{"-dir", t.TempDir(), "-versions", "7"},
		{"-no-such-flag"},
	}
	for _, args := range tests {
		if err := run(args); err == nil {
			t.Errorf("run(%q) succeeded", args)
		}
	}
}
