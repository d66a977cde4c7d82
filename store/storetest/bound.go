package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/pith-dev/pith/store"
)

// bigBytes is the size of the sessions the bound tests refuse: large
// enough that reading one stands out from whatever else a refusal
// allocates, small enough to store in a database quickly.
const bigBytes = 16 << 20

// Allocated is the heap bytes allocated while fn ran (TotalAlloc, which
// only grows, so a collection meanwhile does not hide a read): how a test
// tells a refusal made before the read from one made after it.
func Allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// bigSession is a session of at least size bytes: the header, then
// messages of 256 KiB.
func bigSession(size int) string {
	var b strings.Builder
	b.WriteString(header)
	parent := "null"
	for i := 0; b.Len() < size; i++ {
		id := fmt.Sprintf("big%05d", i)
		fmt.Fprintf(&b, `{"type":"message","id":%q,"parentId":%s,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":%q,"timestamp":1}}`+"\n",
			id, parent, strings.Repeat("x", 256<<10))
		parent = fmt.Sprintf("%q", id)
	}
	return b.String()
}

// runExportWithin: a bounded export asks the bound with the session's
// size, a torn last line included, before it reads, and a session the
// bound refuses is refused with the bound's own error and not read; what
// another host appends meanwhile is not read unasked.
func runExportWithin(t *testing.T, open Opener) {
	ctx := context.Background()
	hosts := open(t)
	s, other := hosts(), hosts()
	name := "x/within.jsonl"
	torn := Sample + `{"type":"message","id":"torn`
	if err := s.Create(ctx, name, []byte(torn)); err != nil {
		t.Fatal(err)
	}
	var asked []int64
	got, err := s.ExportWithin(ctx, name, func(n int64) error { asked = append(asked, n); return nil })
	if err != nil || string(got) != torn {
		t.Fatalf("admitted export = %q, %v; want the session's bytes", got, err)
	}
	if len(asked) != 1 || asked[0] != int64(len(torn)) {
		t.Fatalf("the bound was asked with %v, want once with %d (the torn line's bytes too)", asked, len(torn))
	}
	if got, err := s.ExportWithin(ctx, name, nil); err != nil || string(got) != torn {
		t.Fatalf("export without a bound = %q, %v", got, err)
	}
	errOver := errors.New("over the test's bound")
	refuse := func(int64) error { return errOver }
	if got, err := s.ExportWithin(ctx, name, refuse); err != errOver || got != nil {
		t.Fatalf("refused export = %q, %v; want nothing and the bound's error as it is", got, err)
	}
	asked = nil
	if _, err := s.ExportWithin(ctx, "x/none.jsonl", func(n int64) error { asked = append(asked, n); return nil }); !errors.Is(err, store.ErrNotFound) || asked != nil {
		t.Fatalf("export of a missing session: %v (bound asked with %v), want ErrNotFound, unasked", err, asked)
	}

	// Another host appends while the bound is being asked: the read
	// takes what was asked about, not what the session grew to. (The
	// append waits for the read in the files store, whose reader holds
	// the file's lock; a database's snapshot leaves it out.)
	appended := make(chan error, 1)
	got, err = s.ExportWithin(ctx, name, func(n int64) error {
		asked = []int64{n}
		go func() {
			_, err := other.Append(ctx, name, "aaaa0002", msg("meanwhile"))
			appended <- err
		}()
		return nil
	})
	if err := <-appended; err != nil {
		t.Fatal(err)
	}
	if err != nil || string(got) != torn || asked[0] != int64(len(got)) {
		t.Fatalf("export with an append meanwhile = %q (asked %d), %v; want the %d bytes asked about", got, asked[0], err, len(torn))
	}

	big := bigSession(bigBytes)
	if err := s.Create(ctx, "x/big.jsonl", []byte(big)); err != nil {
		t.Fatal(err)
	}
	used := Allocated(func() { _, err = s.ExportWithin(ctx, "x/big.jsonl", refuse) })
	if err != errOver {
		t.Fatalf("export of a session over the bound: %v, want the bound's error", err)
	}
	if used > bigBytes/4 {
		t.Fatalf("refusing a session of %d bytes allocated %d bytes: it was read before the bound was asked", len(big), used)
	}
	// The measure sees a read: an admitted export allocates the session.
	var data []byte
	used = Allocated(func() { data, err = s.ExportWithin(ctx, "x/big.jsonl", func(int64) error { return nil }) })
	if err != nil || !bytes.Equal(data, []byte(big)) || used < uint64(len(big)) {
		t.Fatalf("admitted export of the large session: %d bytes allocated, %v", used, err)
	}
}

// runSessionBoundUnread: a Session's whole reads (an open, a reload
// after another host grew the session) are refused by SessionOptions.Admit
// before the session is read, in the words of the refusal it always gave
// (the session's name, then Admit's error), and the handle keeps what it
// had.
func runSessionBoundUnread(t *testing.T, open Opener) {
	ctx := context.Background()
	hosts := open(t)
	a, b := hosts(), hosts()
	errOver := errors.New("over the test's bound")
	admit := func(size int64) error {
		if size > 64<<10 {
			return fmt.Errorf("%w: %d bytes", errOver, size)
		}
		return nil
	}
	refusal := func(what, name string, err error) {
		t.Helper()
		if !errors.Is(err, errOver) || !strings.HasPrefix(err.Error(), name+": "+errOver.Error()) {
			t.Fatalf("%s: %v, want %q then the bound's refusal", what, err, name+": ")
		}
	}

	big := bigSession(bigBytes)
	mustCreate(t, a, "s/big.jsonl", big)
	var err error
	used := Allocated(func() {
		_, err = store.OpenSession(ctx, b, "s/big.jsonl", store.SessionOptions{Holder: "B", Admit: admit})
	})
	refusal("open of a session over the bound", "s/big.jsonl", err)
	if used > bigBytes/4 {
		t.Fatalf("refusing to open a session of %d bytes allocated %d bytes: it was read first", len(big), used)
	}

	// Grown past the bound by another host, then rewritten (a reload,
	// not a catch-up, is what reads it).
	mustCreate(t, a, "s/grown.jsonl", Sample)
	hb, err := store.OpenSession(ctx, b, "s/grown.jsonl", store.SessionOptions{Holder: "B", Admit: admit})
	if err != nil {
		t.Fatal(err)
	}
	file := hb.File()
	l, err := a.AcquireLease(ctx, "s/grown.jsonl", "A", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Rewrite(ctx, l, "aaaa0002", []byte(big)); err != nil {
		t.Fatal(err)
	}
	used = Allocated(func() { err = hb.Reload(ctx) })
	refusal("reload of a session rewritten past the bound", "s/grown.jsonl", err)
	if used > bigBytes/4 {
		t.Fatalf("refusing to reload a session of %d bytes allocated %d bytes: it was read first", len(big), used)
	}
	if hb.File() != file {
		t.Fatal("a refused reload changed the handle's view")
	}
}
