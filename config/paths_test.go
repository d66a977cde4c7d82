package config

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestRelativePluginPathsFollowTheFile: a configuration in one directory,
// loaded from another working directory by a relative name: the plugin's
// executable and its path arguments resolve against the file's directory,
// every other argument is passed as written.
func TestRelativePluginPathsFollowTheFile(t *testing.T) {
	confDir := t.TempDir()
	writeExecutable(t, confDir, "audit")
	writeFile(t, confDir, "pith.yaml", `plugins:
  - name: audit
    path: audit
    args: ["--file", "./audit.jsonl", "--out=../out/x.jsonl", "--level", "info", "--glob=*.go", "-", "/abs/file", "--home", "~/audit.jsonl"]
`)
	elsewhere := t.TempDir()
	t.Chdir(elsewhere)
	rel, err := filepath.Rel(elsewhere, filepath.Join(confDir, "pith.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(rel, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	// t.TempDir may be reached through a link; Load keeps the name it was given.
	base, _ := filepath.Abs(filepath.Dir(filepath.Join(elsewhere, rel)))
	p := cfg.Plugins[0]
	if want := filepath.Join(base, "audit"); p.Path != want {
		t.Errorf("path = %s, want %s", p.Path, want)
	}
	want := []string{"--file", filepath.Join(base, "audit.jsonl"), "--out=" + filepath.Join(filepath.Dir(base), "out", "x.jsonl"),
		"--level", "info", "--glob=*.go", "-", "/abs/file", "--home", filepath.Join(home, "audit.jsonl")}
	if !reflect.DeepEqual(p.Args, want) {
		t.Errorf("args\n got %q\nwant %q", p.Args, want)
	}
}

func TestResolveArg(t *testing.T) {
	resolve := func(p string) string { return "/conf/" + p }
	for in, want := range map[string]string{
		"./a":        "/conf/./a",
		"../a":       "/conf/../a",
		"--f=./a":    "--f=/conf/./a",
		"-f=../a":    "-f=/conf/../a",
		"a.jsonl":    "a.jsonl",
		".hidden":    ".hidden",
		"x=./a":      "x=./a", // not a flag: a value of the plugin's own
		"--f=a":      "--f=a",
		"":           "",
		"/etc/x":     "/etc/x",
		"--f=/etc/x": "--f=/etc/x",
	} {
		if got := resolveArg(in, resolve); got != want {
			t.Errorf("resolveArg(%q) = %q, want %q", in, got, want)
		}
	}
}
