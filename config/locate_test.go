package config

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestLocate: --config, else PITH_CONFIG, else the default location when a
// file is there, else none; XDG_CONFIG_HOME moves the default location,
// and a relative one is ignored as the XDG rule says.
func TestLocate(t *testing.T) {
	home, xdg := t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv(PathEnv, "")
	inHome := filepath.Join(home, ".config", "pith", "config.yaml")
	inXDG := filepath.Join(xdg, "pith", "config.yaml")
	if got := DefaultPath(); got != inHome {
		t.Fatalf("DefaultPath = %s, want %s", got, inHome)
	}
	if got := Locate(""); got != "" {
		t.Errorf("no file anywhere: Locate = %q, want none", got)
	}
	mkdirs(t, filepath.Dir(inHome), filepath.Dir(inXDG))
	writeFile(t, filepath.Dir(inHome), "config.yaml", "contextWindow: 100000\n")
	if got := Locate(""); got != inHome {
		t.Errorf("Locate = %q, want %s", got, inHome)
	}
	t.Setenv("XDG_CONFIG_HOME", xdg)
	if got := Locate(""); got != "" {
		t.Errorf("XDG_CONFIG_HOME without the file: Locate = %q, want none", got)
	}
	writeFile(t, filepath.Dir(inXDG), "config.yaml", "contextWindow: 200001\n")
	if got := Locate(""); got != inXDG {
		t.Errorf("Locate = %q, want %s", got, inXDG)
	}
	t.Setenv("XDG_CONFIG_HOME", "relative/dir")
	if got := Locate(""); got != inHome {
		t.Errorf("a relative XDG_CONFIG_HOME: Locate = %q, want %s", got, inHome)
	}
	t.Setenv(PathEnv, "/named/by/env.yaml")
	if got := Locate(""); got != "/named/by/env.yaml" {
		t.Errorf("PITH_CONFIG: Locate = %q", got)
	}
	if got := Locate("flag.yaml"); got != "flag.yaml" {
		t.Errorf("--config: Locate = %q", got)
	}
	// The default file loads as any other.
	t.Setenv(PathEnv, "")
	cfg, err := Load(Locate(""), noEnv)
	if err != nil || cfg.ContextWindow != 100000 {
		t.Errorf("default file: %v, contextWindow %v", err, cfg)
	}
}

// TestMissingFileIsErrNotFound: a named file that does not exist is
// ErrNotFound (a usage error to the CLI), not ErrInvalid, and its message
// names the file; Open says the same for a daemon's file.
func TestMissingFileIsErrNotFound(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope.yaml")
	_, err := Load(missing, noEnv)
	if !errors.Is(err, ErrNotFound) || !errors.Is(err, os.ErrNotExist) || errors.Is(err, ErrInvalid) {
		t.Fatalf("Load: %v", err)
	}
	if want := "read configuration: open " + missing + ": no such file or directory"; err.Error() != want {
		t.Errorf("message %q, want %q", err, want)
	}
	if _, _, err := Open(missing, WatcherOptions{}); !errors.Is(err, ErrNotFound) {
		t.Errorf("Open: %v", err)
	}
	if _, _, err := Open(filepath.Join(missing, "in-missing-dir.yaml"), WatcherOptions{}); !errors.Is(err, ErrNotFound) {
		t.Errorf("Open in a missing directory: %v", err)
	}
	if _, err := InertSet(missing, noEnv); !errors.Is(err, ErrNotFound) {
		t.Errorf("InertSet: %v", err)
	}
	// A file that exists but cannot be read is not "not found".
	if _, err := Load(t.TempDir()+"/", noEnv); errors.Is(err, ErrNotFound) {
		t.Errorf("a directory: %v", err)
	}
}

func mkdirs(t *testing.T, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}
