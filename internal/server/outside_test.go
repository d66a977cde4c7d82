package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pith-dev/pith/client"
	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/store/files"
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
	other, err := files.Open(filepath.Join(root, "team", "s1.jsonl"), files.Options{})
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

// TestOutsideAppendsAnnounced: a WatchEvents client hears of entries
// another writer appends to the session file as they land, as
// entries_appended — the event the daemon's own appends produce — with no
// call of its own reading the session first. Before, it learnt of them
// only at its next read. The other writer here is this process through
// the session package; TestServeWatchSeesOutsideAppends (cmd/host) runs
// pith label and a pi-style appender as other processes.
func TestOutsideAppendsAnnounced(t *testing.T) {
	root := t.TempDir()
	h := startServer(t, testConfig(root))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := h.client.Create(ctx, "team/s1.jsonl", "/work")
	if err != nil {
		t.Fatal(err)
	}
	w, err := s.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	next := func(what string) client.Event {
		t.Helper()
		ev, err := w.Next()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return ev
	}
	own, err := s.AppendMessages(ctx, userMsg("daemon-q", 20))
	if err != nil {
		t.Fatal(err)
	}
	if ev := next("own append"); ev.Kind != string(EventEntriesAppended) || ev.EntryID != entryID(t, own[0]) {
		t.Fatalf("after the daemon's own append: %+v, want entries_appended of %s", ev, entryID(t, own[0]))
	}
	for i := range 2 {
		other, err := files.Open(filepath.Join(root, "team", "s1.jsonl"), files.Options{})
		if err != nil {
			t.Fatal(err)
		}
		d, err := session.MessageDraft(userMsg(fmt.Sprint("outside-", i), 20))
		if err != nil {
			t.Fatal(err)
		}
		outside, err := other.Append(d)
		other.Close()
		if err != nil {
			t.Fatal(err)
		}
		if ev := next("outside append"); ev.Kind != string(EventEntriesAppended) || ev.EntryID != outside[0].ID {
			t.Fatalf("after another writer's append %d: %+v, want entries_appended of %s", i, ev, outside[0].ID)
		}
	}
}

func entryID(t *testing.T, raw []byte) string {
	t.Helper()
	var e struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(raw, &e); err != nil {
		t.Fatal(err)
	}
	return e.ID
}

// TestFollowersComeAndGo: streams opening and closing on a session while
// another writer and the daemon append — the file watch is started and
// stopped again and again under them. Every stream still open at the end
// hears of the last outside append, and nothing is left following once
// the last stream is gone. (Run it with -race.)
func TestFollowersComeAndGo(t *testing.T) {
	root := t.TempDir()
	h := startServer(t, testConfig(root))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := h.client.Create(ctx, "s.jsonl", "/w")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(root, "s.jsonl")
	outside := func(tag string) string {
		other, err := files.Open(path, files.Options{})
		if err != nil {
			t.Error(err)
			return ""
		}
		defer other.Close()
		d, err := session.MessageDraft(userMsg(tag, 5))
		if err != nil {
			t.Error(err)
			return ""
		}
		es, err := other.Append(d)
		if err != nil {
			t.Error(err)
			return ""
		}
		return es[0].ID
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; ; j++ {
				select {
				case <-done:
					return
				default:
				}
				w, err := s.Watch(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				if (i+j)%2 == 0 {
					if _, err := s.AppendMessages(ctx, userMsg("own", 5)); err != nil {
						t.Error(err)
					}
				} else {
					outside(fmt.Sprint("churn-", i, "-", j))
				}
				w.Close()
			}
		}()
	}
	time.Sleep(300 * time.Millisecond)
	close(done)
	wg.Wait()

	// Streams opened now all hear of the next outside append.
	var ws []*client.Watcher
	for range 3 {
		w, err := s.Watch(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		ws = append(ws, w)
	}
	// Whatever the churn left unread is read when the first of them
	// starts the follow; drain up to the last outside entry.
	last := outside("last")
	for i, w := range ws {
		for {
			ev, err := w.Next()
			if err != nil {
				t.Fatalf("stream %d: %v", i, err)
			}
			if ev.Kind == string(EventEntriesAppended) && ev.EntryID == last {
				break
			}
		}
	}
	for _, w := range ws {
		w.Close()
	}
	h.srv.mu.Lock()
	o := h.srv.sessions[s.ID]
	h.srv.mu.Unlock()
	deadline := time.Now().Add(30 * time.Second)
	for {
		o.follow.mu.Lock()
		n := o.follow.n
		o.follow.mu.Unlock()
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d followers left after every stream closed", n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestOverwriteInPlaceAnnounced: a session file another program rewrites
// in place (truncated and written again, the same session with fewer
// entries) reaches WatchEvents clients as session_rewritten. The daemon
// read it again whole and served the new text, but said nothing.
func TestOverwriteInPlaceAnnounced(t *testing.T) {
	root := t.TempDir()
	h := startServer(t, testConfig(root))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := h.client.Create(ctx, "team/s1.jsonl", "/work")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendMessages(ctx, userMsg("first", 20), userMsg("second", 20)); err != nil {
		t.Fatal(err)
	}
	w, err := s.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	path := filepath.Join(root, "team", "s1.jsonl")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Keep the header and the first message only, in the same file.
	lines := bytes.SplitAfter(data, []byte("\n"))
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(bytes.Join(lines[:2], nil)); err != nil {
		t.Fatal(err)
	}
	f.Close()
	for {
		ev, err := w.Next()
		if err != nil {
			t.Fatalf("no session_rewritten after an overwrite in place: %v", err)
		}
		if ev.Kind == string(EventSessionRewritten) {
			return
		}
	}
}
