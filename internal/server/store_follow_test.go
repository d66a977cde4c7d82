package server

import (
	"context"
	"testing"
	"time"

	"github.com/pith-dev/pith/client"
	"github.com/pith-dev/pith/internal/pgtest"
)

// TestSharedStoreAppendsAnnounced: a WatchEvents client of one host hears
// of what a client of another host appends to the shared session, as
// entries_appended, with no call of its own reading the session. Before,
// it heard of them only at its next call: the session was no file to
// watch, and the store's own watch told only the viewer.
func TestSharedStoreAppendsAnnounced(t *testing.T) {
	url := pgtest.NewDatabase(t)
	cfg := testConfig(t.TempDir())
	a, b := startStoreHost(t, cfg, url), startStoreHost(t, cfg, url)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sa, err := a.client.Create(ctx, "team/s1.jsonl", "/work")
	if err != nil {
		t.Fatal(err)
	}
	sb, err := b.client.Create(ctx, "team/s1.jsonl", "/work")
	if err != nil {
		t.Fatal(err)
	}
	w, err := sa.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	got := make(chan client.Event, 16)
	go func() {
		defer close(got)
		for {
			ev, err := w.Next()
			if err != nil {
				return
			}
			got <- ev
		}
	}()
	for i := range 3 {
		raw, err := sb.AppendMessages(ctx, userMsg("from-b", 20))
		if err != nil {
			t.Fatal(err)
		}
		want := entryID(t, raw[0])
		for seen := false; !seen; {
			select {
			case ev, ok := <-got:
				if !ok {
					t.Fatalf("append %d: the stream ended", i)
				}
				seen = ev.Kind == string(EventEntriesAppended) && ev.EntryID == want
			case <-ctx.Done():
				t.Fatalf("append %d on host B: no entries_appended of %s on host A", i, want)
			}
		}
	}
}
