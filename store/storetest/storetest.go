// Package storetest is the conformance suite every store.Store passes:
// the same tests run against the files store and PostgreSQL.
package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/store"
)

// Opener opens a fresh, empty store for one test; calling it twice in a
// test gives two handles on the same storage (two hosts).
type Opener func(t *testing.T) func() store.Store

const header = `{"type":"session","version":3,"id":"0b9c4c3e-6a57-4bd0-9d1d-2a8b3c1e0f00","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}` + "\n"

// Sample is a small session with a skipped line and odd spacing, which
// must survive byte for byte.
const Sample = header +
	`{"type":"message","id":"aaaa0001","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1}}` + "\n" +
	"not json at all\n" +
	`{"type":"message", "id":"aaaa0002","parentId":"aaaa0001","timestamp":"2026-01-01T00:00:02.000Z","message":{"role":"user","content":"ü \u00e9","timestamp":2}}` + "\n"

func msg(text string) session.Draft {
	return session.Draft{Type: session.TypeMessage, Fields: map[string]any{"message": map[string]any{"role": "user", "content": text, "timestamp": 1}}}
}

// Run runs the suite.
func Run(t *testing.T, open Opener) {
	ctx := context.Background()
	t.Run("RoundTrip", func(t *testing.T) {
		s := open(t)()
		for i, data := range []string{Sample, header, Sample + `{"type":"message","id":"torn`} {
			name := fmt.Sprintf("t/rt%d.jsonl", i)
			if err := s.Create(ctx, name, []byte(data)); err != nil {
				t.Fatal(err)
			}
			got, err := s.Export(ctx, name)
			if err != nil || string(got) != data {
				t.Fatalf("%s: export = %q, %v; want the imported bytes", name, got, err)
			}
		}
		if err := s.Create(ctx, "t/rt0.jsonl", []byte(Sample)); !errors.Is(err, store.ErrExists) {
			t.Fatalf("second create: %v, want ErrExists", err)
		}
		if _, err := s.Export(ctx, "t/none.jsonl"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("missing: %v, want ErrNotFound", err)
		}
		for _, bad := range []string{"../x.jsonl", "/abs.jsonl", ".hidden.jsonl", "a/b.txt", ""} {
			if err := s.Create(ctx, bad, []byte(Sample)); !errors.Is(err, store.ErrInvalidName) {
				t.Fatalf("create %q: %v, want ErrInvalidName", bad, err)
			}
		}
		if err := s.Create(ctx, "t/bad.jsonl", []byte("{}\n")); err == nil {
			t.Fatal("a file without a session header was stored")
		}
		names, err := s.List(ctx)
		if err != nil || len(names) != 3 || names[0] != "t/rt0.jsonl" {
			t.Fatalf("List = %v, %v", names, err)
		}
	})
	t.Run("ExportWithin", func(t *testing.T) { runExportWithin(t, open) })
	t.Run("AppendChecksLast", func(t *testing.T) {
		s := open(t)()
		name := "a.jsonl"
		if err := s.Create(ctx, name, []byte(Sample)); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Append(ctx, name, "aaaa0001", msg("stale")); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("stale append: %v, want ErrConflict", err)
		}
		if got, _ := s.Export(ctx, name); string(got) != Sample {
			t.Fatal("a refused append changed the session")
		}
		es, err := s.Append(ctx, name, "aaaa0002", msg("one"), msg("two"))
		if err != nil || len(es) != 2 || es[0].ParentID != "aaaa0002" || es[1].ParentID != es[0].ID {
			t.Fatalf("append = %v, %v", es, err)
		}
		f, err := s.Load(ctx, name)
		if err != nil || store.LastID(f) != es[1].ID || len(f.Entries) != 4 {
			t.Fatalf("load after append: %v", err)
		}
		if es[1].Line != 6 {
			t.Fatalf("line of the last entry = %d, want 6", es[1].Line)
		}
		root := ""
		if _, err := s.Append(ctx, name, es[1].ID, session.Draft{Type: session.TypeMessage, Parent: &root, Fields: map[string]any{"message": map[string]any{"role": "user", "content": "r", "timestamp": 1}}}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Append(ctx, "nope.jsonl", "", msg("x")); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("append to a missing session: %v", err)
		}
	})
	t.Run("Tail", func(t *testing.T) {
		s := open(t)()
		if err := s.Create(ctx, "tail.jsonl", []byte(Sample)); err != nil {
			t.Fatal(err)
		}
		tail, n, err := s.Tail(ctx, "tail.jsonl", 4)
		if err != nil || n != 4 || tail != nil {
			t.Fatalf("Tail at the end = %q, %d, %v", tail, n, err)
		}
		es, err := s.Append(ctx, "tail.jsonl", "aaaa0002", msg("t1"), msg("t2"))
		if err != nil {
			t.Fatal(err)
		}
		tail, n, err = s.Tail(ctx, "tail.jsonl", 4)
		want := string(es[0].Raw) + "\n" + string(es[1].Raw) + "\n"
		if err != nil || n != 6 || string(tail) != want {
			t.Fatalf("Tail after append = %q, %d, %v; want %q, 6", tail, n, err, want)
		}
		all, _, _ := s.Tail(ctx, "tail.jsonl", 0)
		exported, _ := s.Export(ctx, "tail.jsonl")
		if !bytes.Equal(all, exported) {
			t.Fatal("Tail from 0 differs from Export")
		}
		if _, _, err := s.Tail(ctx, "none.jsonl", 0); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Tail of a missing session: %v", err)
		}
	})
	t.Run("AppendAfterTornTail", func(t *testing.T) {
		s := open(t)()
		torn := Sample + `{"type":"mess`
		if err := s.Create(ctx, "torn.jsonl", []byte(torn)); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Append(ctx, "torn.jsonl", "aaaa0002", msg("after")); err != nil {
			t.Fatal(err)
		}
		got, _ := s.Export(ctx, "torn.jsonl")
		if !bytes.HasPrefix(got, []byte(torn+"\n{")) {
			t.Fatalf("the new line was glued to the torn one:\n%s", got)
		}
	})
	t.Run("ConcurrentWriters", func(t *testing.T) {
		o := open(t)
		hosts := []store.Store{o(), o(), o()}
		name := "c.jsonl"
		if err := hosts[0].Create(ctx, name, []byte(header)); err != nil {
			t.Fatal(err)
		}
		const writers, each = 6, 10
		var wg sync.WaitGroup
		errs := make(chan error, writers)
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s := hosts[w%len(hosts)]
				for i := 0; i < each; {
					f, err := s.Load(ctx, name)
					if err != nil {
						errs <- err
						return
					}
					_, err = s.Append(ctx, name, store.LastID(f), msg(fmt.Sprintf("w%d-%d", w, i)))
					if errors.Is(err, store.ErrConflict) {
						continue
					}
					if err != nil {
						errs <- err
						return
					}
					i++
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		f, err := hosts[1].Load(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if len(f.Entries) != writers*each {
			t.Fatalf("%d entries, want %d", len(f.Entries), writers*each)
		}
		seen := map[string]bool{}
		for i, e := range f.Entries {
			want := ""
			if i > 0 {
				want = f.Entries[i-1].ID
			}
			if e.ParentID != want {
				t.Fatalf("entry %d forks: parent %q, want %q", i, e.ParentID, want)
			}
			text := e.Get("message.content").String()
			if seen[text] {
				t.Fatalf("%s written twice", text)
			}
			seen[text] = true
		}
	})
	t.Run("Lease", func(t *testing.T) {
		o := open(t)
		a, b := o(), o()
		name := "l.jsonl"
		if err := a.Create(ctx, name, []byte(Sample)); err != nil {
			t.Fatal(err)
		}
		la, err := a.AcquireLease(ctx, name, "host-a", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.AcquireLease(ctx, name, "host-b", time.Hour); !errors.Is(err, store.ErrLeaseHeld) {
			t.Fatalf("second holder: %v, want ErrLeaseHeld", err)
		}
		if _, err := a.AcquireLease(ctx, name, "host-a", time.Hour); err != nil {
			t.Fatalf("renew: %v", err)
		}
		rewritten := Sample + `{"type":"label","id":"bbbb0001","parentId":"aaaa0002","timestamp":"2026-01-01T00:00:03.000Z","targetId":"aaaa0001","label":"x"}` + "\n"
		if err := a.Rewrite(ctx, la, "aaaa0001", []byte(rewritten)); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("rewrite with a stale last entry: %v, want ErrConflict", err)
		}
		// a's lease expires (a died): b takes over, a's late rewrite is refused.
		if _, err := a.AcquireLease(ctx, name, "host-a", time.Millisecond); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
		lb, err := b.AcquireLease(ctx, name, "host-b", time.Hour)
		if err != nil {
			t.Fatalf("takeover after expiry: %v", err)
		}
		if err := a.Rewrite(ctx, la, "aaaa0002", []byte(rewritten)); !errors.Is(err, store.ErrLeaseLost) {
			t.Fatalf("rewrite after losing the lease: %v, want ErrLeaseLost", err)
		}
		if got, _ := b.Export(ctx, name); string(got) != Sample {
			t.Fatal("a refused rewrite changed the session")
		}
		if err := b.Rewrite(ctx, lb, "aaaa0002", []byte(rewritten)); err != nil {
			t.Fatal(err)
		}
		if got, _ := a.Export(ctx, name); string(got) != rewritten {
			t.Fatalf("after rewrite:\n%s", got)
		}
		if err := a.ReleaseLease(ctx, la); err != nil {
			t.Fatal(err)
		}
		if _, err := a.AcquireLease(ctx, name, "host-a", time.Hour); !errors.Is(err, store.ErrLeaseHeld) {
			t.Fatalf("releasing a lost lease freed the new holder's: %v", err)
		}
		if err := b.ReleaseLease(ctx, lb); err != nil {
			t.Fatal(err)
		}
		// b took a's lease and gave it back: a's renewal finds it lost,
		// and takes nothing.
		if _, err := a.RenewLease(ctx, la, time.Hour); !errors.Is(err, store.ErrLeaseLost) {
			t.Fatalf("renewing a lease taken over and released since: %v, want ErrLeaseLost", err)
		}
		la, err = a.AcquireLease(ctx, name, "host-a", time.Hour)
		if err != nil {
			t.Fatalf("after release: %v", err)
		}
		if l, err := a.RenewLease(ctx, la, time.Hour); err != nil || l.Holder != "host-a" || l.Session != name {
			t.Fatalf("renewing a held lease: %+v, %v", l, err)
		}
		if _, err := b.RenewLease(ctx, store.Lease{Session: name, Holder: "host-b"}, time.Hour); !errors.Is(err, store.ErrLeaseLost) {
			t.Fatalf("renewing another holder's lease: %v, want ErrLeaseLost", err)
		}
		if _, err := a.AcquireLease(ctx, "none.jsonl", "host-a", time.Hour); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("lease on a missing session: %v", err)
		}
	})
	t.Run("WatchSeesOtherHosts", func(t *testing.T) {
		o := open(t)
		a, b := o(), o()
		name := "w.jsonl"
		if err := a.Create(ctx, name, []byte(Sample)); err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithCancel(ctx)
		defer cancel()
		events, err := b.Watch(wctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := a.Append(ctx, name, "aaaa0002", msg("seen?")); err != nil {
			t.Fatal(err)
		}
		waitFor(events, name, store.EventAppended)
		// A session in a directory that did not exist when the watch began.
		if err := a.Create(ctx, "tenant-new/x.jsonl", []byte(Sample)); err != nil {
			t.Fatal(err)
		}
		waitFor(events, "tenant-new/x.jsonl", store.EventCreated)
		if _, err := a.Append(ctx, "tenant-new/x.jsonl", "aaaa0002", msg("there")); err != nil {
			t.Fatal(err)
		}
		waitFor(events, "tenant-new/x.jsonl", store.EventAppended)
		l, err := a.AcquireLease(ctx, name, "h", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		f, _ := a.Load(ctx, name)
		data, _ := a.Export(ctx, name)
		if err := a.Rewrite(ctx, l, store.LastID(f), data); err != nil {
			t.Fatal(err)
		}
		waitFor(events, name, store.EventRewritten)
		cancel()
		for range events {
		}
	})
}

// waitFor reads events until one for name of kind (a test timeout ends a
// wait for one that never comes).
func waitFor(events <-chan store.Event, name, kind string) {
	for ev := range events {
		if ev.Session == name && ev.Kind == kind {
			return
		}
	}
}

// Seeds are fuzz inputs for RoundTrip: lines a store must keep exactly.
var Seeds = []string{
	Sample,
	header,
	Sample + `{"type":"message","id":"torn`,
	header + `{"type":"custom","id":"a\u0000b","parentId":"\udc00","timestamp":"x","customType":"\u0000"}` + "\n",
	header + "\r\n\n  \n" + `{"type":"label","id":"é\xff","parentId":null}` + "\n",
}

// RoundTrip stores data under a fresh name when the store accepts it and
// checks that an export gives back the same bytes and a load the same
// entries. Fuzz targets call it.
func RoundTrip(t *testing.T, s store.Store, name string, data []byte) {
	ctx := context.Background()
	want, perr := session.Parse(bytes.Clone(data))
	if err := s.Create(ctx, name, data); err != nil {
		if perr == nil {
			t.Fatalf("a session pi can read was refused: %v", err)
		}
		return
	}
	if perr != nil {
		t.Fatalf("stored a file that is not a session: %v", perr)
	}
	got, err := s.Export(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("export differs from the import:\n got %q\nwant %q", got, data)
	}
	f, err := s.Load(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Entries) != len(want.Entries) {
		t.Fatalf("load: %d entries, want %d", len(f.Entries), len(want.Entries))
	}
}
