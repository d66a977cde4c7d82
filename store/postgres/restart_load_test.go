package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/internal/pgtest"
	"github.com/pith-dev/pith/store"
	"github.com/pith-dev/pith/store/postgres"
	"github.com/pith-dev/pith/store/storetest"
)

// TestDatabaseRestartUnderLoad stops the server while writers append
// batches through three handles: every error is ErrUnavailable (or a
// conflict between the writers), no batch is half-written or written
// twice, and the writers finish after the restart without reopening
// anything.
func TestDatabaseRestartUnderLoad(t *testing.T) {
	url := pgtest.NewDatabase(t)
	ctx := context.Background()
	var hosts []store.Store
	for range 3 {
		s, err := postgres.Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		hosts = append(hosts, s)
	}
	const writers, batches, size = 6, 15, 10
	names := []string{"load/a.jsonl", "load/b.jsonl"}
	for _, n := range names {
		if err := hosts[0].Create(ctx, n, []byte(storetest.Sample)); err != nil {
			t.Fatal(err)
		}
	}
	var unavailable, progress atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, name := hosts[w%3], names[w%2]
			for b := 0; b < batches; {
				tag := fmt.Sprintf("w%d-b%d", w, b)
				f, err := s.Load(ctx, name)
				if errors.Is(err, store.ErrUnavailable) {
					unavailable.Add(1)
					time.Sleep(20 * time.Millisecond)
					continue
				}
				if err != nil {
					errs <- err
					return
				}
				// An append whose commit reply was lost may have landed:
				// a writer that retries reads first, as a client must.
				if hasBatch(f, tag) {
					b++
					continue
				}
				drafts := make([]session.Draft, size)
				for j := range drafts {
					drafts[j] = session.Draft{Type: session.TypeCustom, Fields: map[string]any{"customType": "batch", "data": map[string]any{"batch": tag}}}
				}
				_, err = s.Append(ctx, name, store.LastID(f), drafts...)
				switch {
				case err == nil:
					b++
					progress.Add(1)
				case errors.Is(err, store.ErrConflict):
				case errors.Is(err, store.ErrUnavailable):
					unavailable.Add(1)
					time.Sleep(20 * time.Millisecond)
				default:
					errs <- err
					return
				}
			}
		}()
	}
	for progress.Load() < 10 && len(errs) == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	pgtest.Stop(t)
	time.Sleep(300 * time.Millisecond)
	pgtest.Restart(t)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("an error other than Unavailable or Conflict: %v", err)
	}
	if unavailable.Load() == 0 {
		t.Log("no call saw the database down (it came back first)")
	}
	total := 0
	for _, n := range names {
		f, err := hosts[1].Load(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		counts := map[string]int{}
		for i, e := range f.Entries {
			if i > 0 && e.ParentID != f.Entries[i-1].ID {
				t.Fatalf("%s: entry %d forks", n, i)
			}
			if tag := e.Get("data.batch").String(); tag != "" {
				counts[tag]++
			}
		}
		for tag, c := range counts {
			if c != size {
				t.Fatalf("%s: batch %s has %d entries, want %d", n, tag, c, size)
			}
		}
		total += len(counts)
	}
	if total != writers*batches {
		t.Fatalf("%d batches, want %d", total, writers*batches)
	}
	t.Logf("%d calls saw the database unavailable; all %d batches whole and once", unavailable.Load(), total)
}

func hasBatch(f *session.File, tag string) bool {
	for i := len(f.Entries) - 1; i >= 0; i-- {
		if f.Entries[i].Get("data.batch").String() == tag {
			return true
		}
	}
	return false
}
