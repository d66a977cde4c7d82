package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pith-dev/pith/client"
	"github.com/pith-dev/pith/config"
	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/store/files"
)

// The daemon holds a files session to server.maxSessionBytes however it
// grows: another writer's lines past the bound are never read in, the
// session's calls and streams are refused with ResourceExhausted as an
// open of it is, and it works again once its file shrinks or the bound is
// raised. Before, every call's catch-up, and the follower's, read in all
// the other writer had appended.

// growOutside appends, as the pith CLI or pi does and with no bound of
// its own, one message of about n tokens to the session file at path.
func growOutside(t *testing.T, path, tag string, n int) {
	t.Helper()
	other, err := files.Open(path, files.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	d, err := session.MessageDraft(userMsg(tag, n))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Append(d); err != nil {
		t.Fatal(err)
	}
}

// held is what the daemon has read of session id: its entries, and
// their bytes with the header's.
func held(t *testing.T, h *harness, id string) (entries int, bytes int64) {
	t.Helper()
	h.srv.mu.Lock()
	o := h.srv.sessions[id]
	h.srv.mu.Unlock()
	if o == nil {
		t.Fatalf("session %s is not open", id)
	}
	f := o.st().File()
	bytes = int64(len(f.Header.Raw) + 1)
	for _, e := range f.Entries {
		bytes += int64(len(e.Raw) + 1)
	}
	return len(f.Entries), bytes
}

// refusedByBound checks that err is the bound's refusal of limit.
func refusedByBound(t *testing.T, what string, err error, limit int) {
	t.Helper()
	if !errors.Is(err, client.ErrResourceExhausted) || !strings.Contains(err.Error(), fmt.Sprintf("over server.maxSessionBytes (%d)", limit)) {
		t.Fatalf("%s: %v, want ResourceExhausted over server.maxSessionBytes (%d)", what, err, limit)
	}
}

// streamEnd waits for w's stream to end, skipping events, and returns why.
func streamEnd(t *testing.T, w *client.Watcher) error {
	t.Helper()
	for {
		if _, err := w.Next(); err != nil {
			return err
		}
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func applyBound(h *harness, limit int) {
	old := h.srv.Config()
	next := *old
	next.Server.MaxSessionBytes = limit
	h.srv.ApplyConfig(config.Change{Old: old, New: &next})
}

// TestGrownPastTheBoundWhileWatched: another writer appends past the
// bound while a WatchEvents stream is open. The stream ends with the
// refusal instead of waiting, every call is refused the same way without
// the new lines read in or the file touched, a new watch is refused, and
// a smaller file renamed over the session (a prune) makes it work again.
func TestGrownPastTheBoundWhileWatched(t *testing.T) {
	root := t.TempDir()
	cfg := testConfig(root)
	const limit = 64 << 10
	cfg.Server.MaxSessionBytes = limit
	h := startServer(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := h.client.Create(ctx, "team/grows.jsonl", "/w")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendMessages(ctx, userMsg("q", 50), assistantMsg("a", 50)); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(root, "team", "grows.jsonl")
	small := readFile(t, path)
	w, err := s.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	entries, _ := held(t, h, s.ID)

	growOutside(t, path, "outside", 20000) // about 80 KB
	refusedByBound(t, "the open stream", streamEnd(t, w), limit)
	grown := readFile(t, path)

	_, err = s.Context(ctx)
	refusedByBound(t, "GetContext", err, limit)
	_, err = s.AppendMessages(ctx, userMsg("more", 10))
	refusedByBound(t, "Append", err, limit)
	_, err = s.Watch(ctx)
	refusedByBound(t, "a new watch", err, limit)
	_, err = h.client.Open(ctx, "team/grows.jsonl")
	refusedByBound(t, "an open of it", err, limit)
	if n, b := held(t, h, s.ID); n != entries || b > limit {
		t.Fatalf("the daemon holds %d entries (%d bytes), had %d: it read past the bound", n, b, entries)
	}
	if !bytes.Equal(readFile(t, path), grown) {
		t.Fatal("a refused call changed the file")
	}

	// A prune renames a smaller file over it.
	tmp := path + ".new"
	if err := os.WriteFile(tmp, small, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Context(ctx); err != nil {
		t.Fatalf("GetContext after the prune: %v", err)
	}
	w2, err := s.Watch(ctx)
	if err != nil {
		t.Fatalf("a watch after the prune: %v", err)
	}
	defer w2.Close()
	if _, err := s.AppendMessages(ctx, userMsg("after", 10)); err != nil {
		t.Fatalf("Append after the prune: %v", err)
	}
}

// TestGrownPastTheBoundDuringCalls: another writer grows the session
// past the bound while calls run and a stream is open. Every call either
// goes through or is refused by the bound, the stream ends with the
// refusal, and the daemon never holds more than the bound.
func TestGrownPastTheBoundDuringCalls(t *testing.T) {
	root := t.TempDir()
	cfg := testConfig(root)
	const limit = 256 << 10
	cfg.Server.MaxSessionBytes = limit
	h := startServer(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	s, err := h.client.Create(ctx, "race.jsonl", "/w")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(root, "race.jsonl")
	w, err := s.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ended := make(chan error, 1)
	go func() { ended <- streamEnd(t, w) }()

	stop := make(chan struct{})
	var calls sync.WaitGroup
	errs := make(chan error, 4)
	for i := range 2 {
		calls.Add(1)
		go func() {
			defer calls.Done()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				var err error
				if i == 0 {
					_, err = s.Context(ctx)
				} else {
					_, err = s.AppendMessages(ctx, userMsg(fmt.Sprint("daemon", n), 200))
				}
				if err != nil && !errors.Is(err, client.ErrResourceExhausted) {
					errs <- err
					return
				}
			}
		}()
	}
	for i := 0; ; i++ {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() > 2*limit {
			break
		}
		growOutside(t, path, fmt.Sprint("outside", i), 2500) // about 10 KB
	}
	close(stop)
	calls.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("a call failed other than by the bound: %v", err)
	}
	refusedByBound(t, "the stream", <-ended, limit)
	_, err = s.Context(ctx)
	refusedByBound(t, "GetContext after the growth", err, limit)
	if _, b := held(t, h, s.ID); b > limit {
		t.Fatalf("the daemon holds %d bytes of the session, over the bound %d", b, limit)
	}
}

// TestBoundLoweredBelowTheSession: a reload lowers the bound below an open
// session's size. Its stream ends with the refusal, its calls are refused,
// nothing is written; a reload raising the bound again lets it work.
func TestBoundLoweredBelowTheSession(t *testing.T) {
	root := t.TempDir()
	h := startServer(t, testConfig(root))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := h.client.Create(ctx, "lowered.jsonl", "/w")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendMessages(ctx, userMsg("q", 2000), assistantMsg("a", 500)); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(root, "lowered.jsonl")
	before := readFile(t, path)
	w, err := s.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()

	limit := len(before) - 1
	applyBound(h, limit)
	refusedByBound(t, "the open stream", streamEnd(t, w), limit)
	_, err = s.Context(ctx)
	refusedByBound(t, "GetContext", err, limit)
	_, err = s.AppendMessages(ctx, userMsg("more", 10))
	refusedByBound(t, "Append", err, limit)
	if !bytes.Equal(readFile(t, path), before) {
		t.Fatal("a refused call changed the file")
	}

	applyBound(h, len(before)+64<<10)
	if _, err := s.Context(ctx); err != nil {
		t.Fatalf("GetContext with the bound raised: %v", err)
	}
	w2, err := s.Watch(ctx)
	if err != nil {
		t.Fatalf("a watch with the bound raised: %v", err)
	}
	defer w2.Close()
	if _, err := s.AppendMessages(ctx, userMsg("more", 10)); err != nil {
		t.Fatalf("Append with the bound raised: %v", err)
	}
}

// TestTornAppendAtTheBound: another writer's line caught halfway, ending
// right at the bound, leaves the session working on what it had (the
// unfinished line is no entry yet); the rest of it, past the bound, is
// refused, stream and calls; raised to the file's size, the bound lets
// the finished line in.
func TestTornAppendAtTheBound(t *testing.T) {
	root := t.TempDir()
	h := startServer(t, testConfig(root))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := h.client.Create(ctx, "torn.jsonl", "/w")
	if err != nil {
		t.Fatal(err)
	}
	appended, err := s.AppendMessages(ctx, userMsg("q", 50))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(root, "torn.jsonl")
	size := int64(len(readFile(t, path)))
	d, err := session.MessageDraft(userMsg("outside", 500))
	if err != nil {
		t.Fatal(err)
	}
	line, err := session.BuildLine(d, "0badcafe", entryID(t, appended[0]), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	line = append(line, '\n')
	half := len(line) / 2
	limit := int(size) + half
	applyBound(h, limit)
	w, err := s.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(line[:half]); err != nil {
		t.Fatal(err)
	}
	c, err := s.Context(ctx)
	if err != nil {
		t.Fatalf("GetContext with a torn line ending at the bound: %v", err)
	}
	if c.LeafID != entryID(t, appended[0]) {
		t.Fatalf("the leaf is %s: the unfinished line was taken for an entry", c.LeafID)
	}
	if _, err := f.Write(line[half:]); err != nil {
		t.Fatal(err)
	}
	refusedByBound(t, "the open stream", streamEnd(t, w), limit)
	_, err = s.Context(ctx)
	refusedByBound(t, "GetContext with the line finished past the bound", err, limit)
	if n, _ := held(t, h, s.ID); n != 1 {
		t.Fatalf("the daemon holds %d entries, want 1", n)
	}

	applyBound(h, int(size)+len(line))
	c, err = s.Context(ctx)
	if err != nil {
		t.Fatalf("GetContext with the bound at the file's size: %v", err)
	}
	if c.LeafID != "0badcafe" {
		t.Fatalf("the leaf is %s, not the finished line's entry", c.LeafID)
	}
}
