package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/store"
)

// BenchAppend appends b.N entries through hosts handles on the same
// storage, two writers per handle; shared puts every writer on one session
// (conflicts retried), else each writer has its own. Reports appends/s.
func BenchAppend(b *testing.B, open func() store.Store, hosts int, shared bool) {
	ctx := context.Background()
	hs := make([]store.Store, hosts)
	for i := range hs {
		hs[i] = open()
	}
	writers := 2 * hosts
	names := make([]string, writers)
	for w := range names {
		names[w] = fmt.Sprintf("bench/%d-%d.jsonl", time.Now().UnixNano(), w)
		if shared && w > 0 {
			names[w] = names[0]
			continue
		}
		if err := hs[0].Create(ctx, names[w], []byte(header)); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	per := (b.N + writers - 1) / writers
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := hs[w%hosts]
			for i := 0; i < per; {
				f, err := s.Load(ctx, names[w])
				if err != nil {
					b.Error(err)
					return
				}
				if _, err := s.Append(ctx, names[w], store.LastID(f), msg("bench")); errors.Is(err, store.ErrConflict) {
					continue
				} else if err != nil {
					b.Error(err)
					return
				}
				i++
			}
		}()
	}
	wg.Wait()
	b.ReportMetric(float64(per*writers)/time.Since(start).Seconds(), "appends/s")
}

// BenchContext loads a session of n messages and builds its context, b.N
// times, through hosts handles in turn; reports p50 and p99.
func BenchContext(b *testing.B, open func() store.Store, hosts, n int) {
	ctx := context.Background()
	hs := make([]store.Store, hosts)
	for i := range hs {
		hs[i] = open()
	}
	name := fmt.Sprintf("bench/ctx-%d.jsonl", time.Now().UnixNano())
	if err := hs[0].Create(ctx, name, []byte(header)); err != nil {
		b.Fatal(err)
	}
	last := ""
	for i := 0; i < n; i += 50 {
		drafts := make([]session.Draft, 50)
		for j := range drafts {
			drafts[j] = msg(fmt.Sprintf("message %d with some text to make it a realistic line of a session", i+j))
		}
		es, err := hs[0].Append(ctx, name, last, drafts...)
		if err != nil {
			b.Fatal(err)
		}
		last = es[len(es)-1].ID
	}
	durs := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		f, err := hs[i%hosts].Load(ctx, name)
		if err != nil {
			b.Fatal(err)
		}
		c := session.NewTree(f.Entries).BuildContext(session.LeafDefault)
		if len(c.Messages) != n {
			b.Fatalf("%d messages, want %d", len(c.Messages), n)
		}
		durs = append(durs, time.Since(t0))
	}
	slices.Sort(durs)
	b.ReportMetric(float64(durs[len(durs)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(durs[len(durs)*99/100].Microseconds()), "p99-µs")
}

// BenchSessionAppend appends b.N messages through store.Session handles,
// one per host, to one session that already holds base entries: the
// engine's append path (no reload; a race lost to another host catches
// up through Tail and goes on at the new leaf — a conflict still
// returned is retried, as a client would). Reports appends/s and the
// p50 and p99 of one message's append, its retries included.
func BenchSessionAppend(b *testing.B, open func() store.Store, hosts, base int) {
	ctx := context.Background()
	hs := make([]*store.Session, hosts)
	name := fmt.Sprintf("bench/sess-%d.jsonl", time.Now().UnixNano())
	for i := range hs {
		st := open()
		if i == 0 {
			if err := st.Create(ctx, name, []byte(header)); err != nil {
				b.Fatal(err)
			}
			last := ""
			for n := 0; n < base; n += 50 {
				drafts := make([]session.Draft, 50)
				for j := range drafts {
					drafts[j] = msg(fmt.Sprintf("message %d with some text to make it a realistic line of a session", n+j))
				}
				es, err := st.Append(ctx, name, last, drafts...)
				if err != nil {
					b.Fatal(err)
				}
				last = es[len(es)-1].ID
			}
		}
		h, err := store.OpenSession(ctx, st, name, store.SessionOptions{Holder: fmt.Sprint("bench-", i)})
		if err != nil {
			b.Fatal(err)
		}
		hs[i] = h
	}
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	per := (b.N + hosts - 1) / hosts
	durs := make([][]time.Duration, hosts)
	for w, h := range hs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t0 := time.Now()
			for i := 0; i < per; {
				_, err := h.Append(msg("bench"))
				if errors.Is(err, store.ErrConflict) {
					continue
				}
				if err != nil {
					b.Error(err)
					return
				}
				durs[w] = append(durs[w], time.Since(t0))
				t0 = time.Now()
				i++
			}
		}()
	}
	wg.Wait()
	b.ReportMetric(float64(per*hosts)/time.Since(start).Seconds(), "appends/s")
	all := slices.Concat(durs...)
	if len(all) > 0 {
		slices.Sort(all)
		b.ReportMetric(float64(all[len(all)/2].Microseconds()), "p50-µs")
		b.ReportMetric(float64(all[len(all)*99/100].Microseconds()), "p99-µs")
	}
}

// BenchSessionRefresh is store.Session.Refresh on a session of base
// entries that nobody changes: what a host pays per request to learn
// whether another host wrote (one Tail). Reports p50 and p99.
func BenchSessionRefresh(b *testing.B, open func() store.Store, base int) {
	ctx := context.Background()
	st := open()
	name := fmt.Sprintf("bench/refresh-%d.jsonl", time.Now().UnixNano())
	if err := st.Create(ctx, name, []byte(header)); err != nil {
		b.Fatal(err)
	}
	last := ""
	for n := 0; n < base; n += 50 {
		drafts := make([]session.Draft, 50)
		for j := range drafts {
			drafts[j] = msg(fmt.Sprintf("message %d with some text to make it a realistic line of a session", n+j))
		}
		es, err := st.Append(ctx, name, last, drafts...)
		if err != nil {
			b.Fatal(err)
		}
		last = es[len(es)-1].ID
	}
	h, err := store.OpenSession(ctx, st, name, store.SessionOptions{Holder: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	durs := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if err := h.Refresh(ctx); err != nil {
			b.Fatal(err)
		}
		durs = append(durs, time.Since(t0))
	}
	slices.Sort(durs)
	b.ReportMetric(float64(durs[len(durs)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(durs[len(durs)*99/100].Microseconds()), "p99-µs")
}
