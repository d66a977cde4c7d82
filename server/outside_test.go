package server

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pith-dev/pith/core/session"
)

// TestOutsideAppendsAreFollowed: pi (or the pith CLI) appends to a session
// file the daemon has open. The daemon's next read shows those entries, and
// its next append goes below them — where a fresh load of the file puts
// the leaf — instead of hanging off the leaf it had, which forked the
// session around the other writer's entries (pi's context then lost the
// daemon's entries, or the daemon's lost pi's).
func TestOutsideAppendsAreFollowed(t *testing.T) {
	root := t.TempDir()
	h := startServer(t, testConfig(root))
	ctx := context.Background()
	s, err := h.client.Create(ctx, "team/s1.jsonl", "/work")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendMessages(ctx, userMsg("daemon-q", 50), assistantMsg("daemon-a", 50)); err != nil {
		t.Fatal(err)
	}
	// Another process appends below the daemon's leaf, as pi does.
	other, err := session.Open(filepath.Join(root, "team", "s1.jsonl"), session.Options{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := session.MessageDraft(userMsg("outside-q", 50))
	if err != nil {
		t.Fatal(err)
	}
	outside, err := other.Append(d)
	other.Close()
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.Context(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c.LeafID != outside[0].ID || !strings.Contains(string(c.Messages[len(c.Messages)-1]), "outside-q") {
		t.Fatalf("the daemon's context ends at %s, not at the entry appended outside (%s)", c.LeafID, outside[0].ID)
	}
	got, err := s.AppendMessages(ctx, assistantMsg("daemon-after", 50))
	if err != nil {
		t.Fatal(err)
	}
	var e struct {
		ParentID string `json:"parentId"`
	}
	if err := json.Unmarshal(got[0], &e); err != nil {
		t.Fatal(err)
	}
	if e.ParentID != outside[0].ID {
		t.Fatalf("the daemon appended below %s, not below the entry appended outside (%s): the session forked", e.ParentID, outside[0].ID)
	}
	c, err = s.Context(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var text []string
	for _, m := range c.Messages {
		text = append(text, string(m))
	}
	all := strings.Join(text, "\n")
	for _, tag := range []string{"daemon-q", "daemon-a", "outside-q", "daemon-after"} {
		if !strings.Contains(all, tag) {
			t.Errorf("context lacks %s", tag)
		}
	}
}

// TestSessionOverwrittenInPlaceByAnother: the file of an open session is
// overwritten in place (same file) with another session. The daemon's
// next call finds it holds another session and refuses — and so does
// every call after, instead of serving the other session under the first
// one's id once the refresh had read it.
func TestSessionOverwrittenInPlaceByAnother(t *testing.T) {
	root := t.TempDir()
	h := startServer(t, testConfig(root))
	ctx := context.Background()
	s, err := h.client.Create(ctx, "team/s1.jsonl", "/work")
	if err != nil {
		t.Fatal(err)
	}
	other, err := h.client.Create(ctx, "team/s2.jsonl", "/elsewhere")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.AppendMessages(ctx, userMsg("other-session", 200)); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "team", "s2.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(root, "team", "s1.jsonl"), os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	f.Close()
	for i := range 2 {
		c, err := s.Context(ctx)
		if err == nil {
			t.Fatalf("call %d: served %d messages from a file that now holds another session", i+1, len(c.Messages))
		}
	}
}
