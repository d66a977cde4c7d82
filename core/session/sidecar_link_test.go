package session_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pith-dev/pith/core/session"
)

// TestIntentSidecarLink: a symlink planted in the place of a session's
// append intent sidecar (.s.jsonl.append -> victim.jsonl: anyone who may
// write the sessions directory — pi's own tools — can make one) is not
// followed. The sidecar was opened with O_CREATE and no check, so the
// link was followed inside the directory and every append wrote its
// 32-byte record over the start of the file it leads to: another
// session's header, another tenant's session under pith serve.
func TestIntentSidecarLink(t *testing.T) {
	dir := t.TempDir()
	path, victim := filepath.Join(dir, "s.jsonl"), filepath.Join(dir, "victim.jsonl")
	for _, p := range []string{path, victim} {
		s, err := session.Create(p, "/w", session.Options{})
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
	}
	before, _ := os.ReadFile(victim)
	if err := os.Symlink("victim.jsonl", filepath.Join(dir, ".s.jsonl.append")); err != nil {
		t.Fatal(err)
	}
	s, err := session.Open(path, session.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = s.Append(session.Draft{Type: session.TypeCustom, Fields: map[string]any{"customType": "t"}})
	if err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("append: %v, want the sidecar refused", err)
	}
	if after, _ := os.ReadFile(victim); !bytes.Equal(after, before) {
		t.Fatalf("the file the link leads to was written:\n%q", after)
	}
}

// TestIntentSidecarHardLink: the same with a hard link to the victim: its
// header was overwritten by the intent record.
func TestIntentSidecarHardLink(t *testing.T) {
	dir := t.TempDir()
	path, victim := filepath.Join(dir, "s.jsonl"), filepath.Join(dir, "victim.jsonl")
	for _, p := range []string{path, victim} {
		s, err := session.Create(p, "/w", session.Options{})
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
	}
	before, _ := os.ReadFile(victim)
	if err := os.Link(victim, filepath.Join(dir, ".s.jsonl.append")); err != nil {
		t.Fatal(err)
	}
	s, err := session.Open(path, session.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = s.Append(session.Draft{Type: session.TypeCustom, Fields: map[string]any{"customType": "t"}})
	if err == nil || !strings.Contains(err.Error(), "hard links") {
		t.Errorf("append: %v, want the sidecar refused", err)
	}
	if after, _ := os.ReadFile(victim); !bytes.Equal(after, before) {
		t.Fatalf("the file the hard link shares was written:\n%q", after)
	}
}
