package server

import (
	"context"
	"errors"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pith-dev/pith/client"
)

func TestPathConfinement(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "root")
	outside := filepath.Join(base, "outside")
	for _, d := range []string{root, outside, filepath.Join(root, "team"), filepath.Join(root, "team.jsonl")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	h := startServer(t, testConfig(root))
	ctx := context.Background()
	// A session outside the root, and links to it from inside.
	if _, err := h.client.Create(ctx, "team/inside.jsonl", "/w"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "secret.jsonl"), []byte(`{"type":"session","version":3,"id":"x","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mustSymlink(t, outside, filepath.Join(root, "escape"))
	mustSymlink(t, filepath.Join(outside, "secret.jsonl"), filepath.Join(root, "secret.jsonl"))
	mustSymlink(t, "team", filepath.Join(root, "alias"))
	// os.Root refuses absolute symlinks, even ones pointing inside.
	mustSymlink(t, filepath.Join(root, "team"), filepath.Join(root, "absalias"))

	tests := []struct {
		name   string
		path   string
		create bool
		want   error // nil: allowed
	}{
		{"relative file", "team/inside.jsonl", false, nil},
		{"create in new directory", "new/dir/s.jsonl", true, nil},
		{"symlinked directory inside the root", "alias/inside.jsonl", false, nil},
		{"absolute", filepath.Join(root, "team/inside.jsonl"), false, client.ErrInvalidArgument},
		{"dot-dot", "../outside/secret.jsonl", false, client.ErrInvalidArgument},
		{"dot-dot in the middle", "team/../../outside/secret.jsonl", true, client.ErrInvalidArgument},
		{"empty", "", true, client.ErrInvalidArgument},
		{"root itself", ".", true, client.ErrInvalidArgument},
		{"symlinked directory out", "escape/secret.jsonl", false, client.ErrPermissionDenied},
		{"create through symlinked directory", "escape/new.jsonl", true, client.ErrPermissionDenied},
		{"create below symlinked directory", "escape/sub/new.jsonl", true, client.ErrPermissionDenied},
		{"absolute symlink inside", "absalias/inside.jsonl", false, client.ErrPermissionDenied},
		// A session file is a regular file, never a symlink, wherever it
		// points.
		{"symlinked file out", "secret.jsonl", false, client.ErrInvalidArgument},
		{"directory", "team.jsonl", false, client.ErrInvalidArgument},
		{"missing file", "team/none.jsonl", false, client.ErrNotFound},
		{"not a session name", "authorized_keys", true, client.ErrInvalidArgument},
		{"hidden file", ".bashrc.jsonl", true, client.ErrInvalidArgument},
		{"hidden directory", "team/.ssh/x.jsonl", true, client.ErrInvalidArgument},
		{"dot segment", "./team/inside.jsonl", false, client.ErrInvalidArgument},
		{"empty segment", "team//inside.jsonl", false, client.ErrInvalidArgument},
		{"trailing slash", "team/inside.jsonl/", false, client.ErrInvalidArgument},
		{"space", "team/in side.jsonl", true, client.ErrInvalidArgument},
		{"backslash", `team\inside.jsonl`, true, client.ErrInvalidArgument},
		{"NUL", "team/a\x00.jsonl", true, client.ErrInvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			if tt.create {
				_, err = h.client.Create(ctx, tt.path, "/w")
			} else {
				_, err = h.client.Open(ctx, tt.path)
			}
			if tt.want == nil {
				if err != nil {
					t.Fatalf("open %q: %v", tt.path, err)
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("open %q: got %v, want %v", tt.path, err, tt.want)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(outside, "new.jsonl")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a file was created outside the root: %v", err)
	}
	if _, err := os.Stat(filepath.Join(outside, "sub")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a directory was created outside the root: %v", err)
	}
}

func TestSamePathSharesSession(t *testing.T) {
	root := t.TempDir()
	h := startServer(t, testConfig(root))
	ctx := context.Background()
	a, err := h.client.Create(ctx, "s.jsonl", "/w")
	if err != nil {
		t.Fatal(err)
	}
	b, err := h.client.Open(ctx, "s.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if a.ID != b.ID || !a.Created || b.Created {
		t.Fatalf("got %+v and %+v, want one session created once", a, b)
	}
}

func mustSymlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// FuzzCheckName: a name the grammar accepts is a clean, local path of
// safe segments ending in .jsonl; nothing else gets through.
func FuzzCheckName(f *testing.F) {
	for _, s := range []string{"a.jsonl", "team-a/2026/x.jsonl", "../x.jsonl", "./a.jsonl", "a//b.jsonl", ".jsonl", "a/.b.jsonl", "a\x00.jsonl", "/abs.jsonl", "a/b/", "ü.jsonl", "a\\b.jsonl"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if checkName(name) != nil {
			return
		}
		if !filepath.IsLocal(name) || path.Clean(name) != name || !strings.HasSuffix(name, ".jsonl") {
			t.Fatalf("accepted %q: not a clean local .jsonl path", name)
		}
		for _, seg := range strings.Split(name, "/") {
			if seg == "" || seg[0] == '.' || strings.ContainsAny(seg, "\\\x00 :") {
				t.Fatalf("accepted %q: segment %q", name, seg)
			}
		}
	})
}
