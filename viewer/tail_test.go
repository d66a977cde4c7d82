package viewer

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/store"
)

const tailHeader = `{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}` + "\n"

// entryLine is a user message entry under parent.
func entryLine(id, parent, text string) string {
	p := "null"
	if parent != "" {
		p = fmt.Sprintf("%q", parent)
	}
	return fmt.Sprintf(`{"type":"message","id":%q,"parentId":%s,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":%q,"timestamp":1}}`+"\n", id, p, text)
}

// quietHandler is a Handler on path that reads only when told to (its
// file watch never fires a reading within a test: the debounce is long).
func quietHandler(t *testing.T, path string) *Handler {
	t.Helper()
	h, err := New(Options{Path: path, Debounce: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

func appendTo(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

func entries(h *Handler) []*session.Entry { return h.snap.Load().file.Entries }

// TestReadAppended: an append is read from where the last reading ended,
// a torn line waits for its newline, a reading with nothing new tells the
// page nothing, and the entries keep their line numbers.
func TestReadAppended(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	if err := os.WriteFile(path, []byte(tailHeader+entryLine("a", "", "one")), 0o600); err != nil {
		t.Fatal(err)
	}
	h := quietHandler(t, path)
	v := h.Version()
	if err := h.reload(false); err != nil || h.Version() != v {
		t.Fatalf("nothing appended: version %d → %d, %v", v, h.Version(), err)
	}
	line := entryLine("b", "a", "two")
	appendTo(t, path, line[:20])
	if err := h.reload(false); err != nil || len(entries(h)) != 1 || !h.snap.Load().file.TornTail {
		t.Fatalf("torn line: %d entries, torn %v, %v", len(entries(h)), h.snap.Load().file.TornTail, err)
	}
	appendTo(t, path, line[20:]+"\n"+"not json\n"+entryLine("c", "b", "three"))
	before := entries(h)
	if err := h.reload(false); err != nil {
		t.Fatal(err)
	}
	got := entries(h)
	if len(got) != 3 || got[1].ID != "b" || got[2].ID != "c" || got[2].Line != 6 || h.LeafID() != "c" {
		t.Fatalf("after the append: %d entries, leaf %s, last line %d", len(got), h.LeafID(), got[len(got)-1].Line)
	}
	if len(before) != 1 || before[0].ID != "a" {
		t.Fatal("the earlier snapshot's entries were changed")
	}
	if w := h.snap.Load().file.Warnings; len(w) != 1 || w[0].Line != 5 {
		t.Fatalf("warnings %v", w)
	}
}

// TestReadAppendedRewritten: a session whose lines read so far are no
// longer its start (rewritten in place, or cut) is read whole; a file
// renamed over the session is read whole on the watch's event.
func TestReadAppendedRewritten(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.jsonl")
	if err := os.WriteFile(path, []byte(tailHeader+entryLine("a", "", "one")+entryLine("b", "a", "two")), 0o600); err != nil {
		t.Fatal(err)
	}
	h := quietHandler(t, path)
	// In place, longer, another last line.
	if err := os.WriteFile(path, []byte(tailHeader+entryLine("x", "", "one")+entryLine("y", "x", "two")+entryLine("z", "y", "three")), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := h.reload(false); err != nil || h.LeafID() != "z" || len(entries(h)) != 3 || entries(h)[0].ID != "x" {
		t.Fatalf("rewritten in place: leaf %s, %d entries, %v", h.LeafID(), len(entries(h)), err)
	}
	// Cut shorter.
	if err := os.WriteFile(path, []byte(tailHeader+entryLine("x", "", "one")), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := h.reload(false); err != nil || h.LeafID() != "x" || len(entries(h)) != 1 {
		t.Fatalf("cut: leaf %s, %d entries, %v", h.LeafID(), len(entries(h)), err)
	}
	// Renamed over, the same last line: only a whole reading sees it.
	tmp := filepath.Join(dir, "tmp")
	if err := os.WriteFile(tmp, []byte(tailHeader+entryLine("x", "", "ONE")), 0o600); err != nil {
		t.Fatal(err)
	}
	appendTo(t, path, "") // no change
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	if err := h.reload(true); err != nil || string(entries(h)[0].Raw) != entryLine("x", "", "ONE")[:len(entries(h)[0].Raw)] {
		t.Fatalf("renamed over: %s, %v", entries(h)[0].Raw, err)
	}
}

// TestWatchReadsRenameWhole: the file watch reads a file renamed over
// the session whole, though its last line is the one read before.
func TestWatchReadsRenameWhole(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.jsonl")
	last := entryLine("b", "a", "two")
	if err := os.WriteFile(path, []byte(tailHeader+entryLine("a", "", "one")+last), 0o600); err != nil {
		t.Fatal(err)
	}
	h, err := New(Options{Path: path, Debounce: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	ch, unsub := h.subscribe()
	defer unsub()
	tmp := filepath.Join(dir, "tmp")
	if err := os.WriteFile(tmp, []byte(tailHeader+entryLine("a", "", "ONE")+last), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	for {
		select {
		case <-ch:
		case <-time.After(30 * time.Second):
			t.Fatal("the rename was not read")
		}
		if e := entries(h); len(e) == 2 && string(e[0].Raw) == entryLine("a", "", "ONE")[:len(e[0].Raw)] {
			return
		}
	}
}

// memTail is a Tail over bytes in memory, as a store keeps a session.
type memTail struct {
	mu    sync.Mutex
	data  []byte
	reads int // bytes handed out, to tell a whole reading from an append's
}

func (m *memTail) tail(after int) ([]byte, int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out, n := store.TailOf(m.data, after)
	m.reads += len(out)
	return bytes.Clone(out), n, nil
}

func (m *memTail) set(data string) {
	m.mu.Lock()
	m.data = []byte(data)
	m.mu.Unlock()
}

// TestSessionsStoredSource: a session with no path is read through its
// Tail, follows Refresh by reading only the lines after its last one, and
// Reload by reading it whole; nothing watches a file for it.
func TestSessionsStoredSource(t *testing.T) {
	m := &memTail{}
	m.set(tailHeader + entryLine("a", "", "one"))
	s := NewSessions(SessionsOptions{Resolve: func(name string) (Source, error) {
		return Source{Name: name, Tail: m.tail}, nil
	}})
	defer s.Close()
	o, err := s.acquire("team/s.jsonl", "")
	if err != nil {
		t.Fatal(err)
	}
	h := o.h
	if h.unwatch != nil || s.watch != nil || h.path != "team/s.jsonl" {
		t.Fatalf("watching (%v, %v), path %q", h.unwatch != nil, s.watch != nil, h.path)
	}
	ch, unsub := h.subscribe()
	defer unsub()
	wait := func(leaf string) {
		t.Helper()
		for h.LeafID() != leaf {
			select {
			case <-ch:
			case <-time.After(30 * time.Second):
				t.Fatalf("leaf %s, want %s", h.LeafID(), leaf)
			}
		}
	}
	m.set(tailHeader + entryLine("a", "", "one") + entryLine("b", "a", "two"))
	m.mu.Lock()
	m.reads = 0
	m.mu.Unlock()
	s.Refresh("team/s.jsonl")
	wait("b")
	m.mu.Lock()
	read := m.reads
	m.mu.Unlock()
	// The last line read before (to check the session still ends there)
	// and the new one, not the header.
	if want := len(entryLine("a", "", "one")) + len(entryLine("b", "a", "two")); read != want {
		t.Fatalf("an append read %d bytes, want %d", read, want)
	}
	// A rewrite that keeps the last line: only Reload sees it.
	m.set(tailHeader + entryLine("a", "", "ONE") + entryLine("b", "a", "two"))
	s.Reload("team/s.jsonl")
	for {
		if e := entries(h); bytes.Contains(e[0].Raw, []byte("ONE")) {
			break
		}
		select {
		case <-ch:
		case <-time.After(30 * time.Second):
			t.Fatal("the rewrite was not read")
		}
	}
}
