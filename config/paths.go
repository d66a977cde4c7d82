package config

import (
	"os"
	"path/filepath"
	"strings"
)

// resolvePaths expands ~ and makes relative paths (plugins' executables
// and path arguments, sessions.root, the daemon's TLS files and workspace
// root, workspace.roots) absolute against the configuration file's
// directory — the working directory without a file — so that where a
// daemon was started from does not change which binary runs, where
// sessions go, which files it may read or where a plugin writes.
func resolvePaths(c *Config, source string) {
	base := "."
	if source != "" {
		base = filepath.Dir(source)
	}
	if abs, err := filepath.Abs(base); err == nil {
		base = abs
	}
	resolve := func(p string) string {
		p = expandHome(p)
		if strings.TrimSpace(p) != "" && !filepath.IsAbs(p) {
			p = filepath.Join(base, p)
		}
		return p
	}
	c.Sessions.Root = resolve(c.Sessions.Root)
	for _, f := range []*string{&c.Server.TLS.CertFile, &c.Server.TLS.KeyFile, &c.Server.TLS.ClientCAFile, &c.Server.WorkspaceRoot} {
		if *f != "" {
			*f = resolve(*f)
		}
	}
	for i := range c.Plugins {
		c.Plugins[i].Path = resolve(c.Plugins[i].Path)
		for j, a := range c.Plugins[i].Args {
			c.Plugins[i].Args[j] = resolveArg(a, resolve)
		}
	}
	for i, r := range c.Workspace.Roots {
		c.Workspace.Roots[i] = resolve(r)
	}
}

// resolveArg resolves a plugin argument that is unmistakably a path: one
// that starts with ./, ../ or ~/, or the value of a --name=value argument
// that does. Any other argument (a bare name, a number, a pattern) is
// passed as written: the host cannot know which words a plugin reads as
// file names, and a plugin runs in the host's working directory, so
// "./audit.jsonl" is how a file says "next to me".
func resolveArg(arg string, resolve func(string) string) string {
	if isExplicitPath(arg) {
		return resolve(arg)
	}
	if strings.HasPrefix(arg, "-") {
		if name, value, ok := strings.Cut(arg, "="); ok && isExplicitPath(value) {
			return name + "=" + resolve(value)
		}
	}
	return arg
}

func isExplicitPath(s string) bool {
	for _, prefix := range []string{"./", "../", "~/"} {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return false
}

func expandHome(p string) string {
	if p != "~" && !strings.HasPrefix(p, "~/") {
		return p
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return p
	}
	return filepath.Join(home, strings.TrimPrefix(p, "~"))
}
