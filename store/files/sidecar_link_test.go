package files_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/store/files"
)

// TestIntentSidecarLink: a link planted in the place of a session's
// append intent sidecar (.s.jsonl.append -> victim.jsonl: anyone who may
// write the sessions directory — pi's own tools — can make one) is not
// written through. The sidecar was opened with O_CREATE and no check, so a
// symlink was followed inside the directory and every append wrote its
// 32-byte record over the start of the file it leads to: another
// session's header, another tenant's session under pith serve. A hard
// link to the victim did the same once symlinks were refused.
func TestIntentSidecarLink(t *testing.T) {
	for _, c := range []struct {
		name, refusal string
		link          func(victim, at string) error
	}{
		{"symlink", "not a regular file", func(victim, at string) error { return os.Symlink(filepath.Base(victim), at) }},
		{"hard link", "hard links", os.Link},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path, victim := filepath.Join(dir, "s.jsonl"), filepath.Join(dir, "victim.jsonl")
			for _, p := range []string{path, victim} {
				s, err := files.Create(p, "/w", files.Options{})
				if err != nil {
					t.Fatal(err)
				}
				s.Close()
			}
			before, _ := os.ReadFile(victim)
			if err := c.link(victim, filepath.Join(dir, ".s.jsonl.append")); err != nil {
				t.Fatal(err)
			}
			s, err := files.Open(path, files.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			_, err = s.Append(session.Draft{Type: session.TypeCustom, Fields: map[string]any{"customType": "t"}})
			if err == nil || !strings.Contains(err.Error(), c.refusal) {
				t.Errorf("append: %v, want the sidecar refused", err)
			}
			if after, _ := os.ReadFile(victim); !bytes.Equal(after, before) {
				t.Fatalf("the file the link leads to was written:\n%q", after)
			}
		})
	}
}
