package engine

import (
	"context"
	"strings"
	"testing"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/store/files"
)

// TestAppendFollowsAnotherWriter: between two of the engine's appends,
// another process (pi, a pith command) appends to the file. The engine's
// next append goes below that writer's entry — where a fresh load puts the
// leaf — and its live context includes the entry, as a fresh load's would;
// before, the append forked the session around it and the context missed
// it.
func TestAppendFollowsAnotherWriter(t *testing.T) {
	st, path := newSession(t, 2)
	s := New(st, Options{Summarizer: offline(), Settings: testSettings()})
	other, err := files.Open(path, files.Options{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := session.MessageDraft(userMsg("from the other writer"))
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := other.Append(d)
	other.Close()
	if err != nil {
		t.Fatal(err)
	}
	ours, err := s.AppendMessages(context.Background(), assistantMsg("ours", 1200, 10))
	if err != nil {
		t.Fatal(err)
	}
	if ours[0].ParentID != theirs[0].ID {
		t.Fatalf("appended below %s, not below the other writer's entry %s", ours[0].ParentID, theirs[0].ID)
	}
	var texts []string
	for _, m := range s.Messages() {
		texts = append(texts, string(m.Raw))
	}
	live := strings.Join(texts, "\n")
	if !strings.Contains(live, "from the other writer") || !strings.HasSuffix(live, string(assistantMsg("ours", 1200, 10))) {
		t.Fatalf("live context misses the other writer's message or ours:\n%s", live)
	}
	fresh, err := session.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	tree := session.NewTree(fresh.Entries)
	if got := len(tree.BuildContext(tree.Last().ID).Messages); got != len(s.Messages()) {
		t.Errorf("live context has %d messages, a fresh load's %d", len(s.Messages()), got)
	}
}
