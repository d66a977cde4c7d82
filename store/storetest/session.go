package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pith-dev/pith/core/compaction"
	"github.com/pith-dev/pith/core/engine"
	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/core/summary"
	"github.com/pith-dev/pith/store"
	"github.com/pith-dev/pith/summarize/builtin"
)

// RunSession runs the tests of store.Session, the engine's view of a
// stored session, and of the store methods only it uses (leased appends,
// sidecars, Publish). Every "host" is its own Store value on the same
// storage.
func RunSession(t *testing.T, open Opener) {
	ctx := context.Background()

	t.Run("AppendConflict", func(t *testing.T) {
		hosts := open(t)
		a, b := hosts(), hosts()
		mustCreate(t, a, "s/c.jsonl", header)
		ha, hb := mustOpen(t, a, "s/c.jsonl", "A"), mustOpen(t, b, "s/c.jsonl", "B")
		first, err := ha.Append(msg("from A"))
		if err != nil {
			t.Fatal(err)
		}
		// B has not seen A's entry: its leaf-based append must not fork,
		// nor fail — it catches up and lands below A's entry, as the
		// files store chains appends at the leaf.
		got, err := hb.Append(msg("from B"))
		if err != nil {
			t.Fatalf("append behind another host's: %v", err)
		}
		if got[0].ParentID != first[0].ID || hb.Leaf().ID != got[0].ID {
			t.Fatalf("B's append hangs from %q, want A's %q", got[0].ParentID, first[0].ID)
		}
		// A fixed parent is the caller's choice: retried after catching up.
		p := first[0].ID
		fixed := msg("fixed parent")
		fixed.Parent = &p
		e, err := ha.Append(fixed)
		if err != nil || e[0].ParentID != p {
			t.Fatalf("fixed-parent append: %v, %+v", err, e)
		}
		f := mustLoad(t, a, "s/c.jsonl")
		if len(f.Entries) != 3 || roots(f) != 1 {
			t.Fatalf("entries %d, roots %d; want 3 entries in one tree", len(f.Entries), roots(f))
		}
		// Both handles agree with the store after catching up.
		for _, h := range []*store.Session{ha, hb} {
			if err := h.Refresh(ctx); err != nil {
				t.Fatal(err)
			}
			if len(h.File().Entries) != 3 || h.Leaf().ID != e[0].ID {
				t.Fatalf("%d entries, leaf %s; want 3, %s", len(h.File().Entries), h.Leaf().ID, e[0].ID)
			}
		}
	})

	t.Run("AppendTrueConflict", func(t *testing.T) {
		// A leaf append behind another host's goes on at the new leaf
		// only when that continues the entry it continued; when another
		// host moved the session to another branch, or rewrote the entry
		// away, it is refused with nothing written.
		hosts := open(t)
		a, b := hosts(), hosts()
		mustCreate(t, a, "s/tc.jsonl", Sample)
		ha, hb := mustOpen(t, a, "s/tc.jsonl", "A"), mustOpen(t, b, "s/tc.jsonl", "B")
		// Another branch: A appends below the first entry, as a
		// navigation does (its marker is the session's leaf for all).
		p := "aaaa0001"
		fork := msg("on another branch")
		fork.Parent = &p
		if _, err := ha.Append(fork); err != nil {
			t.Fatal(err)
		}
		before := len(mustLoad(t, a, "s/tc.jsonl").Entries)
		_, err := hb.Append(msg("answer to the old branch"))
		if !errors.Is(err, store.ErrConflict) || !strings.Contains(err.Error(), "another branch") || !strings.Contains(err.Error(), "nothing was written") {
			t.Fatalf("append after another host moved to another branch: %v, want a conflict saying so", err)
		}
		if n := len(mustLoad(t, a, "s/tc.jsonl").Entries); n != before {
			t.Fatalf("%d entries after a refused append, want %d", n, before)
		}
		// Caught up: the caller sees the new branch and appends there.
		if got, err := hb.Append(msg("on the new branch")); err != nil || got[0].ParentID != ha.Leaf().ID {
			t.Fatalf("append after reading again: %v", err)
		}

		// A rewrite that drops the entry the append continued.
		mustCreate(t, a, "s/rw.jsonl", Sample)
		ha, hb = mustOpen(t, a, "s/rw.jsonl", "A"), mustOpen(t, b, "s/rw.jsonl", "B")
		if err := ha.Update(func(tx *session.Tx) (*session.File, error) {
			f := *tx.File()
			f.Entries = f.Entries[:1]
			return &f, nil
		}); err != nil {
			t.Fatal(err)
		}
		if _, err := ha.Append(msg("after the rewrite")); err != nil {
			t.Fatal(err)
		}
		_, err = hb.Append(msg("below a removed entry"))
		if !errors.Is(err, store.ErrConflict) || !strings.Contains(err.Error(), "aaaa0002") || !strings.Contains(err.Error(), "rewrote") {
			t.Fatalf("append below an entry a rewrite removed: %v, want a conflict saying so", err)
		}
	})

	t.Run("Admit", func(t *testing.T) {
		// A handle's bound holds for what other hosts append, read by a
		// catch-up before a call or inside an append's retry.
		hosts := open(t)
		a, b := hosts(), hosts()
		mustCreate(t, a, "s/max.jsonl", Sample)
		ha := mustOpen(t, a, "s/max.jsonl", "A")
		errOver := errors.New("over the test's bound")
		admit := func(size int64) error {
			if size > 4<<10 {
				return fmt.Errorf("%w: %d bytes", errOver, size)
			}
			return nil
		}
		hb, err := store.OpenSession(ctx, b, "s/max.jsonl", store.SessionOptions{Holder: "B", Admit: admit})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ha.Append(msg(strings.Repeat("x", 8<<10))); err != nil {
			t.Fatal(err)
		}
		before := len(hb.File().Entries)
		if _, err := hb.Append(msg("behind")); !errors.Is(err, errOver) {
			t.Fatalf("append that catches up past the bound: %v, want Admit's refusal", err)
		}
		if err := hb.Refresh(ctx); !errors.Is(err, errOver) {
			t.Fatalf("refresh past the bound: %v, want Admit's refusal", err)
		}
		if err := hb.Reload(ctx); !errors.Is(err, errOver) {
			t.Fatalf("reload past the bound: %v, want Admit's refusal", err)
		}
		if n := len(hb.File().Entries); n != before {
			t.Fatalf("the handle took in %d entries past its bound", n-before)
		}
	})

	t.Run("AdmitBeforeRead", func(t *testing.T) { runSessionBoundUnread(t, open) })

	t.Run("LastLineWithoutNewline", func(t *testing.T) {
		// pi reads a last line without its newline that is a whole entry
		// (an editor dropped the newline): it is the session's leaf. A
		// handle that left it out appended below the entry before it, or
		// conflicted with a store that counts it as the last entry until
		// it gave up.
		hosts := open(t)
		a, b := hosts(), hosts()
		last := `{"type":"message","id":"aaaa0003","parentId":"aaaa0002","timestamp":"2026-01-01T00:00:03.000Z","message":{"role":"user","content":"last","timestamp":3}}`
		mustCreate(t, a, "s/nl.jsonl", Sample+last)
		ha := mustOpen(t, a, "s/nl.jsonl", "A")
		if l := ha.Leaf(); l == nil || l.ID != "aaaa0003" {
			t.Fatalf("leaf %v, want the last line's entry aaaa0003", l)
		}
		got, err := ha.Append(msg("after"))
		if err != nil {
			t.Fatal(err)
		}
		if got[0].ParentID != "aaaa0003" || got[0].Line != 6 {
			t.Fatalf("appended below %q at line %d, want below aaaa0003 at line 6", got[0].ParentID, got[0].Line)
		}
		exported, err := a.Export(ctx, "s/nl.jsonl")
		if err != nil || !bytes.HasPrefix(exported, []byte(Sample+last+"\n{")) {
			t.Fatalf("export: %v\n%s", err, exported)
		}
		// Another handle that read the file before the append catches
		// up to exactly the lines after it.
		hb := mustOpen(t, b, "s/nl.jsonl", "B")
		if _, err := ha.Append(msg("more")); err != nil {
			t.Fatal(err)
		}
		if err := hb.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		if n := len(hb.File().Entries); n != 5 || hb.Leaf().ParentID != got[0].ID {
			t.Fatalf("B sees %d entries (want 5), leaf %+v", n, hb.Leaf())
		}
	})

	t.Run("ConcurrentHandles", func(t *testing.T) {
		hosts := open(t)
		mustCreate(t, hosts(), "s/cc.jsonl", header)
		const writers, each = 3, 15
		var wg sync.WaitGroup
		errs := make(chan error, writers)
		for w := range writers {
			h := mustOpen(t, hosts(), "s/cc.jsonl", fmt.Sprint("H", w))
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < each; {
					_, err := h.Append(msg(fmt.Sprintf("w%d-%d", w, i)))
					if errors.Is(err, store.ErrConflict) {
						continue // caught up: retry, as a client would
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
		f := mustLoad(t, hosts(), "s/cc.jsonl")
		if len(f.Entries) != writers*each {
			t.Fatalf("%d entries, want %d", len(f.Entries), writers*each)
		}
		// One chain: every entry's parent is the one before it.
		for i, e := range f.Entries[1:] {
			if e.ParentID != f.Entries[i].ID {
				t.Fatalf("entry %d hangs from %s, not the entry before it: a fork", i+2, e.ParentID)
			}
		}
	})

	t.Run("LeasedAppend", func(t *testing.T) {
		s := open(t)()
		mustCreate(t, s, "s/l.jsonl", header)
		l, err := s.AcquireLease(ctx, "s/l.jsonl", "A", 300*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.AppendLeased(ctx, l, "", msg("under the lease")); err != nil {
			t.Fatal(err)
		}
		waitExpired(t, s, "s/l.jsonl", "B")
		last := store.LastID(mustLoad(t, s, "s/l.jsonl"))
		if _, err := s.AppendLeased(ctx, l, last, msg("after losing it")); !errors.Is(err, store.ErrLeaseLost) {
			t.Fatalf("append with a lost lease: %v, want ErrLeaseLost", err)
		}
		if n := len(mustLoad(t, s, "s/l.jsonl").Entries); n != 1 {
			t.Fatalf("%d entries after a refused append, want 1", n)
		}
	})

	t.Run("Sidecars", func(t *testing.T) {
		s := open(t)()
		mustCreate(t, s, "s/sc.jsonl", Sample)
		if got, err := s.ReadSidecar(ctx, "s/sc.jsonl", ".pruned.jsonl"); err != nil || got != nil {
			t.Fatalf("no sidecar yet: %q, %v", got, err)
		}
		for _, bad := range []string{"/../x", ".x/../../y.jsonl", "..jsonl", "x.jsonl", ".pruned.txt", ".", "", "." + strings.Repeat("x", 64) + ".jsonl"} {
			if _, err := s.ReadSidecar(ctx, "s/sc.jsonl", bad); !errors.Is(err, store.ErrInvalidName) {
				t.Fatalf("bad suffix %q: %v, want ErrInvalidName", bad, err)
			}
		}
		if _, err := s.ReadSidecar(ctx, "../sc.jsonl", ".pruned.jsonl"); !errors.Is(err, store.ErrInvalidName) {
			t.Fatalf("bad name: %v, want ErrInvalidName", err)
		}
		l, err := s.AcquireLease(ctx, "s/sc.jsonl", "A", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		last := store.LastID(mustLoad(t, s, "s/sc.jsonl"))
		// A conflicting rewrite writes no sidecar either.
		if err := s.Rewrite(ctx, l, "nope", []byte(Sample), store.SidecarChange{Suffix: ".pruned.jsonl", Keep: -1, Append: []byte("r1\n")}); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("rewrite: %v, want ErrConflict", err)
		}
		if got, _ := s.ReadSidecar(ctx, "s/sc.jsonl", ".pruned.jsonl"); len(got) != 0 {
			t.Fatalf("a refused rewrite left the sidecar %q", got)
		}
		for _, sc := range []store.SidecarChange{
			{Suffix: ".pruned.jsonl", Keep: -1, Append: []byte("r1\ntorn")},
			{Suffix: ".pruned.jsonl", Keep: 3, Append: []byte("r2\n")},
		} {
			if err := s.Rewrite(ctx, l, last, []byte(Sample), sc); err != nil {
				t.Fatal(err)
			}
		}
		if got, _ := s.ReadSidecar(ctx, "s/sc.jsonl", ".pruned.jsonl"); string(got) != "r1\nr2\n" {
			t.Fatalf("sidecar %q, want the torn record cut and r2 appended", got)
		}
	})

	t.Run("Publish", func(t *testing.T) {
		s := open(t)()
		mustCreate(t, s, "s/p.jsonl", header)
		wctx, cancel := context.WithCancel(ctx)
		defer cancel()
		events, err := s.Watch(wctx)
		if err != nil {
			t.Fatal(err)
		}
		payload := []byte(`{"kind":"compaction_start","reason":"threshold"}`)
		if err := s.Publish(ctx, "s/p.jsonl", payload); err != nil {
			t.Fatal(err)
		}
		for ev := range events {
			if ev.Kind == store.EventPublished && ev.Session == "s/p.jsonl" {
				if !bytes.Equal(ev.Payload, payload) {
					t.Fatalf("payload %s, want %s", ev.Payload, payload)
				}
				break
			}
		}
		big := []byte(`"` + strings.Repeat("x", store.MaxPayload) + `"`)
		if err := s.Publish(ctx, "s/p.jsonl", big); !errors.Is(err, store.ErrPayloadTooLarge) {
			t.Fatalf("big payload: %v, want ErrPayloadTooLarge", err)
		}
		if err := s.Publish(ctx, "s/p.jsonl", []byte("not json")); err == nil {
			t.Fatal("a payload that is not JSON was published")
		}
	})

	t.Run("PruneAndRestore", func(t *testing.T) {
		s := open(t)()
		mustCreate(t, s, "s/pr.jsonl", header)
		h := mustOpen(t, s, "s/pr.jsonl", "A")
		for i := range 6 {
			if _, err := h.Append(toolResult(fmt.Sprint("call", i), strings.Repeat(fmt.Sprintf("line %d of output\n", i), 800))); err != nil {
				t.Fatal(err)
			}
		}
		before, err := s.Export(ctx, "s/pr.jsonl")
		if err != nil {
			t.Fatal(err)
		}
		plan, err := compaction.Prune(h, compaction.PruneSettings{Protect: 4000, Minimum: 100}, time.UnixMilli(1700000000000))
		if err != nil {
			t.Fatal(err)
		}
		if len(plan.Items) == 0 {
			t.Fatal("nothing pruned")
		}
		arch, err := s.ReadSidecar(ctx, "s/pr.jsonl", compaction.ArchiveSuffix)
		if err != nil || bytes.Count(arch, []byte("\n")) != len(plan.Items) {
			t.Fatalf("archive has %d records (%v), want %d", bytes.Count(arch, []byte("\n")), err, len(plan.Items))
		}
		if h.Tree().Get(plan.Items[0].EntryID).Get("message.prunedAt").Int() == 0 {
			t.Fatal("the handle still has the unpruned entry")
		}
		res, err := compaction.Restore(h)
		if err != nil || res.Restored != len(plan.Items) {
			t.Fatalf("restore: %+v, %v", res, err)
		}
		after, err := s.Export(ctx, "s/pr.jsonl")
		if err != nil || !bytes.Equal(after, before) {
			t.Fatalf("restore did not give back the session byte for byte (%v)", err)
		}
	})

	t.Run("CatchUpAfterARewriteThatMovedLines", func(t *testing.T) {
		// A rewrite re-encodes the session: the blank lines of an
		// imported file go, and every later line moves up. When other
		// appends then bring the count back past what a host had read,
		// that host's catch-up must not take the lines after its old
		// count for the new ones: it would miss entries and build the
		// context over a broken chain.
		hosts := open(t)
		a, b := hosts(), hosts()
		name := "s/moved.jsonl"
		mustCreate(t, a, name, Sample+"\n\n")
		ha := mustOpen(t, a, name, "A")
		for i := range 6 {
			if _, err := ha.Append(toolResult(fmt.Sprint("call", i), strings.Repeat(fmt.Sprintf("line %d of output\n", i), 800))); err != nil {
				t.Fatal(err)
			}
		}
		hb := mustOpen(t, b, name, "B")
		// Catching up with plain appends, B's own or A's, reads only
		// the new lines: the parsed file stays the same value.
		read := hb.File()
		if _, err := hb.Append(msg("B's")); err != nil {
			t.Fatal(err)
		}
		if err := ha.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := ha.Append(msg("A's")); err != nil {
			t.Fatal(err)
		}
		if err := hb.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		if hb.File() != read {
			t.Fatal("catching up with appends read the whole session again")
		}
		plan, err := compaction.Prune(ha, compaction.PruneSettings{Protect: 4000, Minimum: 100}, time.UnixMilli(1700000000000))
		if err != nil || len(plan.Items) == 0 {
			t.Fatalf("prune: %d items, %v", len(plan.Items), err)
		}
		for i := range 3 {
			if _, err := ha.Append(msg(fmt.Sprint("after the prune ", i))); err != nil {
				t.Fatal(err)
			}
		}
		if err := hb.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		want, got := mustLoad(t, a, name), hb.File()
		if len(got.Entries) != len(want.Entries) {
			t.Fatalf("B caught up to %d entries, the store has %d", len(got.Entries), len(want.Entries))
		}
		for i, e := range want.Entries {
			if got.Entries[i].ID != e.ID {
				t.Fatalf("entry %d: B has %s, the store %s", i, got.Entries[i].ID, e.ID)
			}
		}
		if p := hb.Tree().Get(plan.Items[0].EntryID); p == nil || p.Get("message.prunedAt").Int() == 0 {
			t.Fatal("B still has the unpruned entry")
		}
	})

	t.Run("CatchUpAfterARewriteThatMovedLinesPastALargeLine", func(t *testing.T) {
		// The same when the last line read is too large to read again
		// on every catch-up: a new entry whose parent is unknown here
		// gives the move away.
		hosts := open(t)
		a, b := hosts(), hosts()
		name := "s/moved-large.jsonl"
		mustCreate(t, a, name, Sample+"\n\n")
		hb := mustOpen(t, b, name, "B")
		if _, err := hb.Append(msg(strings.Repeat("x", 100<<10))); err != nil {
			t.Fatal(err)
		}
		l, err := a.AcquireLease(ctx, name, "A", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		data, err := a.Export(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		for bytes.Contains(data, []byte("\n\n")) {
			data = bytes.ReplaceAll(data, []byte("\n\n"), []byte("\n"))
		}
		last := store.LastID(mustLoad(t, a, name))
		if err := a.Rewrite(ctx, l, last, data); err != nil {
			t.Fatal(err)
		}
		if err := a.ReleaseLease(ctx, l); err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			es, err := a.Append(ctx, name, last, msg(fmt.Sprint("after the rewrite ", i)))
			if err != nil {
				t.Fatal(err)
			}
			last = es[0].ID
		}
		if err := hb.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		if got, want := len(hb.File().Entries), len(mustLoad(t, a, name).Entries); got != want {
			t.Fatalf("B caught up to %d entries, the store has %d", got, want)
		}
		if hb.Leaf() == nil || hb.Leaf().ID != last {
			t.Fatalf("B's leaf is not the last entry %s", last)
		}
	})

	t.Run("CompactionUnderLease", func(t *testing.T) {
		hosts := open(t)
		a, b := hosts(), hosts()
		name := "s/cmp.jsonl"
		mustCreate(t, a, name, header)
		ha, hb := mustOpen(t, a, name, "A"), mustOpen(t, b, name, "B")
		for i := range 8 {
			if _, err := ha.Append(msg(Prose(i, 1200))); err != nil {
				t.Fatal(err)
			}
		}
		if err := hb.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		started, finish := make(chan struct{}), make(chan struct{})
		slow := &blockingSummarizer{started: started, finish: finish}
		ea := engine.New(ha, engine.Options{Settings: CompactSettings(), Summarizer: slow})
		var bAborts int
		eb := engine.New(hb, engine.Options{Summarizer: builtin.New(builtin.Options{}), Settings: CompactSettings(), AbortAgent: func() { bAborts++ }})
		done := make(chan error, 1)
		go func() {
			_, err := ea.Compact(ctx, "")
			done <- err
		}()
		<-started
		// A's summary is being made under its lease: B is told, quietly,
		// and B's agent goes on.
		if _, err := eb.Compact(ctx, ""); !errors.Is(err, engine.ErrCompactingElsewhere) {
			t.Fatalf("B's compaction during A's: %v, want ErrCompactingElsewhere", err)
		}
		if bAborts != 0 {
			t.Fatal("B's refused compaction stopped B's agent")
		}
		// B's own threshold check finds the context above its threshold:
		// the automatic compaction is skipped, quietly — no event, no
		// failure counted.
		small := CompactSettings()
		small.ContextWindow = 3000
		var events []engine.Event
		eauto := engine.New(hb, engine.Options{Summarizer: builtin.New(builtin.Options{}), Settings: small})
		eauto.Subscribe(func(ev engine.Event) { events = append(events, ev) })
		out, err := eauto.CheckThreshold(ctx)
		if err != nil || !strings.Contains(out.Skipped, "another host is compacting") || out.Compaction != nil {
			t.Fatalf("B's threshold check during A's compaction: %+v, %v; want it skipped", out, err)
		}
		if len(events) != 0 || eauto.AutoCompactionDisabled() {
			t.Fatalf("a skipped automatic compaction emitted %v (disabled: %v)", events, eauto.AutoCompactionDisabled())
		}
		// B goes on with the conversation meanwhile: its entries hang
		// below the leaf A prepared from, so they must stay in the context
		// after A's compaction (A's commit catches up and hangs it below
		// them).
		var later []*session.Entry
		for i := range 2 {
			es, err := hb.Append(msg(fmt.Sprint("during the compaction ", i)))
			if err != nil {
				t.Fatal(err)
			}
			later = append(later, es...)
		}
		close(finish)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		f := mustLoad(t, b, name)
		if n := countType(f, session.TypeCompaction); n != 1 {
			t.Fatalf("%d compactions, want exactly 1", n)
		}
		tree := session.NewTree(f.Entries)
		var comp *session.Entry
		for _, e := range f.Entries {
			if e.Type == session.TypeCompaction {
				comp = e
			}
		}
		if comp.ParentID != later[1].ID {
			t.Fatalf("the compaction hangs from %s, want B's newest entry %s", comp.ParentID, later[1].ID)
		}
		ctxIDs := map[string]bool{}
		for _, m := range tree.BuildContext(tree.Last().ID).Messages {
			ctxIDs[m.EntryID] = true
		}
		for _, e := range later {
			if !ctxIDs[e.ID] {
				t.Fatalf("B's entry %s, appended during the compaction, is not in the context after it", e.ID)
			}
		}
		// The lease was released: B may compact now, and its commit
		// rules see A's compaction.
		if _, err := eb.Compact(ctx, ""); err != nil && !errors.Is(err, compaction.ErrNothingToCompact) {
			t.Fatalf("B's compaction after A's: %v", err)
		}
	})

	t.Run("ManualCompactStopsTheAgentOnlyUnderTheLease", func(t *testing.T) {
		hosts := open(t)
		a, b := hosts(), hosts()
		name := "s/abort.jsonl"
		mustCreate(t, a, name, header)
		ha := mustOpen(t, a, name, "A")
		for i := range 8 {
			if _, err := ha.Append(msg(Prose(i, 1200))); err != nil {
				t.Fatal(err)
			}
		}
		// Each time A stops its agent, a third holder asks for the lease:
		// the answer says whether it was held then.
		var asked []error
		var kinds []engine.EventKind
		ea := engine.New(ha, engine.Options{Summarizer: builtin.New(builtin.Options{}), Settings: CompactSettings(), AbortAgent: func() {
			l, err := b.AcquireLease(ctx, name, "probe", time.Minute)
			if err == nil {
				b.ReleaseLease(ctx, l)
			}
			asked = append(asked, err)
		}})
		ea.Subscribe(func(ev engine.Event) { kinds = append(kinds, ev.Kind) })

		// B holds the lease (it is compacting or pruning): A's manual
		// compaction is refused, and A's agent goes on with its turn.
		lb, err := b.AcquireLease(ctx, name, "B", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		before, err := a.Export(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ea.Compact(ctx, "focus"); !errors.Is(err, engine.ErrCompactingElsewhere) {
			t.Fatalf("A's compaction while B holds the lease: %v, want ErrCompactingElsewhere", err)
		}
		if len(asked) != 0 || len(kinds) != 0 {
			t.Fatalf("a compaction refused for B's lease stopped the agent %d times and emitted %v; want neither", len(asked), kinds)
		}
		if after, err := a.Export(ctx, name); err != nil || !bytes.Equal(after, before) {
			t.Fatalf("a refused compaction changed the session (%v)", err)
		}
		if err := b.ReleaseLease(ctx, lb); err != nil {
			t.Fatal(err)
		}

		// The lease is free: A takes it, then stops its agent — once,
		// before anything else of the compaction — and compacts.
		if _, err := ea.Compact(ctx, ""); err != nil {
			t.Fatal(err)
		}
		if len(asked) != 1 || !errors.Is(asked[0], store.ErrLeaseHeld) {
			t.Fatalf("A stopped its agent %d times (the lease then: %v); want once, under A's lease", len(asked), asked)
		}
		if len(kinds) < 3 || kinds[0] != engine.EventAgentAbort || kinds[1] != engine.EventCompactionStart || kinds[len(kinds)-1] != engine.EventCompactionEnd {
			t.Fatalf("events %v, want agent_abort, compaction_start, …, compaction_end", kinds)
		}
		if n := countType(mustLoad(t, b, name), session.TypeCompaction); n != 1 {
			t.Fatalf("%d compactions, want 1", n)
		}
		// The lease was released with the compaction.
		l, err := b.AcquireLease(ctx, name, "B", time.Minute)
		if err != nil {
			t.Fatalf("B's lease after A's compaction: %v", err)
		}
		b.ReleaseLease(ctx, l)
	})

	t.Run("ThresholdAfterAnotherHostCompacted", func(t *testing.T) {
		hosts := open(t)
		a, b := hosts(), hosts()
		name := "s/due.jsonl"
		mustCreate(t, a, name, header)
		ha, hb := mustOpen(t, a, name, "A"), mustOpen(t, b, name, "B")
		for i := range 8 {
			if _, err := ha.Append(msg(Prose(i, 1200))); err != nil {
				t.Fatal(err)
			}
		}
		if err := hb.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		res, err := engine.New(ha, engine.Options{Summarizer: builtin.New(builtin.Options{}), Settings: CompactSettings()}).Compact(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		// B has not read A's compaction yet: its context is above a
		// threshold between the sizes before and after it. Taking the
		// lease catches B up, the context is under the threshold again,
		// and the due compaction is skipped — not counted as a failure.
		st := CompactSettings()
		st.ContextWindow = st.ReserveTokens + (res.TokensBefore+res.TokensAfter)/2
		var events []engine.Event
		eb := engine.New(hb, engine.Options{Summarizer: builtin.New(builtin.Options{}), Settings: st})
		eb.Subscribe(func(ev engine.Event) { events = append(events, ev) })
		out, err := eb.CheckThreshold(ctx)
		if err != nil || out.Compaction != nil || !strings.Contains(out.Skipped, "compacted this session meanwhile") {
			t.Fatalf("B's threshold check after A's compaction: %+v, %v; want it skipped", out, err)
		}
		if len(events) != 0 {
			t.Fatalf("a compaction that was no longer due emitted %v", events)
		}
		if n := countType(mustLoad(t, b, name), session.TypeCompaction); n != 1 {
			t.Fatalf("%d compactions, want exactly 1", n)
		}
	})

	t.Run("TurnEndBehindAnotherHost", func(t *testing.T) {
		// An agent's answer (AfterTurn) whose host has not read what
		// another host wrote meanwhile: after a compaction of its branch
		// it lands below the compaction and is told stale (it answers
		// the context before it); after another host moved the session
		// to another branch it is refused, nothing written.
		hosts := open(t)
		a, b := hosts(), hosts()
		name := "s/turn.jsonl"
		mustCreate(t, a, name, header)
		ha, hb := mustOpen(t, a, name, "A"), mustOpen(t, b, name, "B")
		for i := range 8 {
			if _, err := ha.Append(msg(Prose(i, 1200))); err != nil {
				t.Fatal(err)
			}
		}
		if err := hb.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		eb := engine.New(hb, engine.Options{Summarizer: builtin.New(builtin.Options{}), Settings: CompactSettings()})
		answer := func(text string) json.RawMessage {
			return json.RawMessage(fmt.Sprintf(`{"role":"assistant","content":[{"type":"text","text":%q}],"provider":"p","model":"m","stopReason":"stop","timestamp":%d}`, text, time.Now().Add(-time.Minute).UnixMilli()))
		}
		res, err := engine.New(ha, engine.Options{Summarizer: builtin.New(builtin.Options{}), Settings: CompactSettings()}).Compact(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		out, err := eb.AfterTurn(ctx, answer("made before the compaction"))
		if err != nil {
			t.Fatalf("AfterTurn behind another host's compaction: %v", err)
		}
		if out.Entry.ParentID != res.Entry.ID || !out.Stale || out.Compaction != nil {
			t.Fatalf("the answer hangs from %s (the compaction is %s), stale %v, compaction %v; want below it, stale, no compaction", out.Entry.ParentID, res.Entry.ID, out.Stale, out.Compaction)
		}

		// A moves the session to another branch, as a navigation does.
		p := res.Entry.ID
		marker := msg("on another branch")
		marker.Parent = &p
		if _, err := ha.Append(marker); err != nil {
			t.Fatal(err)
		}
		before := len(mustLoad(t, a, name).Entries)
		if _, err := eb.AfterTurn(ctx, answer("answer to the old branch")); !errors.Is(err, store.ErrConflict) || !strings.Contains(err.Error(), "another branch") {
			t.Fatalf("AfterTurn after another host moved to another branch: %v, want the conflict saying so", err)
		}
		if n := len(mustLoad(t, a, name).Entries); n != before {
			t.Fatalf("%d entries after a refused answer, want %d", n, before)
		}
		if hb.Leaf() == nil || hb.Leaf().ID != ha.Leaf().ID {
			t.Fatalf("B did not catch up with the branch A moved to")
		}
	})

	t.Run("SharedHoldsReleasedInAnyOrder", func(t *testing.T) {
		hosts := open(t)
		a, b := hosts(), hosts()
		name := "s/shared-holds.jsonl"
		mustCreate(t, a, name, header)
		h := mustOpen(t, a, name, "A")
		first, releaseFirst, err := h.HoldLease(ctx)
		if err != nil {
			t.Fatal(err)
		}
		second, releaseSecond, err := h.HoldLease(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer releaseSecond()
		// The first hold is released before the second: the lease stays
		// A's while the second runs, and work under it still commits.
		releaseFirst()
		if first.Err() == nil {
			t.Error("the released hold's context did not end")
		}
		if second.Err() != nil {
			t.Fatalf("the remaining hold's context ended: %v", context.Cause(second))
		}
		if _, err := b.AcquireLease(ctx, name, "B", time.Minute); !errors.Is(err, store.ErrLeaseHeld) {
			t.Fatalf("B took the lease while A still holds it: %v", err)
		}
		if _, err := h.Append(msg("under the second hold")); err != nil {
			t.Fatalf("append under the remaining hold: %v", err)
		}
		if err := h.Update(func(tx *session.Tx) (*session.File, error) { return nil, nil }); err != nil {
			t.Fatalf("update under the remaining hold: %v", err)
		}
		// Losing the lease ends every hold's context.
		if err := b.ReleaseLease(ctx, store.Lease{Session: name, Holder: "A"}); err != nil {
			t.Fatal(err)
		}
		if _, err := b.AcquireLease(ctx, name, "B", time.Minute); err != nil {
			t.Fatal(err)
		}
		select {
		case <-second.Done():
		case <-time.After(time.Minute): // a safety net, not a measurement
			t.Fatal("the lease was taken over, and the remaining hold's context did not end")
		}
		if cause := context.Cause(second); !errors.Is(cause, store.ErrLeaseLost) {
			t.Fatalf("cause %v, want ErrLeaseLost", cause)
		}
		releaseSecond()
		if err := b.ReleaseLease(ctx, store.Lease{Session: name, Holder: "B"}); err != nil {
			t.Fatal(err)
		}
		// Once the last hold is released the lease is free again.
		if _, err := b.AcquireLease(ctx, name, "B", time.Minute); err != nil {
			t.Fatalf("the lease after every hold was released: %v", err)
		}
	})

	t.Run("LeaseLostStopsTheWork", func(t *testing.T) {
		hosts := open(t)
		a, b := hosts(), hosts()
		name := "s/lost.jsonl"
		mustCreate(t, a, name, header)
		h := mustOpen(t, a, name, "A")
		held, release, err := h.HoldLease(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer release()
		// An operator clears A's lease and B takes it: A's next renewal
		// finds it taken over, and the work under it is told to stop.
		if err := b.ReleaseLease(ctx, store.Lease{Session: name, Holder: "A"}); err != nil {
			t.Fatal(err)
		}
		lb, err := b.AcquireLease(ctx, name, "B", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		select {
		case <-held.Done():
		case <-time.After(time.Minute):
			t.Fatal("the lease was taken over, and the context under it did not end")
		}
		if cause := context.Cause(held); !errors.Is(cause, store.ErrLeaseLost) {
			t.Fatalf("cause %v, want ErrLeaseLost", cause)
		}
		// A commit under the lost lease is refused; B's lease is intact.
		if _, err := h.Append(msg("late")); !errors.Is(err, store.ErrLeaseLost) {
			t.Fatalf("append under the lost lease: %v, want ErrLeaseLost", err)
		}
		if _, err := b.AppendLeased(ctx, lb, store.LastID(mustLoad(t, b, name)), msg("B's")); err != nil {
			t.Fatalf("B's leased append: %v", err)
		}
		release()
		if err := b.ReleaseLease(ctx, lb); err != nil {
			t.Fatal(err)
		}

		// The same mid-compaction: A's summary is being made when the
		// lease goes; the compaction is aborted, nothing saved.
		if err := h.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		for i := range 8 {
			if _, err := h.Append(msg(Prose(i, 1200))); err != nil {
				t.Fatal(err)
			}
		}
		started := make(chan struct{})
		slow := &blockingSummarizer{started: started, finish: make(chan struct{})}
		ea := engine.New(h, engine.Options{Settings: CompactSettings(), Summarizer: slow})
		done := make(chan error, 1)
		go func() {
			_, err := ea.Compact(ctx, "")
			done <- err
		}()
		<-started
		if err := b.ReleaseLease(ctx, store.Lease{Session: name, Holder: "A"}); err != nil {
			t.Fatal(err)
		}
		if _, err := b.AcquireLease(ctx, name, "B", time.Minute); err != nil {
			t.Fatal(err)
		}
		err = <-done
		if !errors.Is(err, engine.ErrAborted) || !errors.Is(err, store.ErrLeaseLost) {
			t.Fatalf("compaction whose lease was taken over: %v, want ErrAborted and ErrLeaseLost", err)
		}
		if n := countType(mustLoad(t, b, name), session.TypeCompaction); n != 0 {
			t.Fatalf("%d compactions saved under a lost lease", n)
		}
	})

	t.Run("LateRenewalAfterTakeover", func(t *testing.T) {
		// A's renewal is sent in time but arrives late (a pool without a
		// free connection, a slow network, a host paused at the wrong
		// moment): meanwhile A's lease expired, B took it, wrote under it
		// and gave it back. The late renewal must not take the lease
		// again: A's work stops and its commits are refused.
		hosts := open(t)
		a, b := hosts(), hosts()
		name := "s/late.jsonl"
		mustCreate(t, a, name, header)
		slow := &stalledRenewal{Store: a, holder: "A", stalled: make(chan struct{}), resume: make(chan struct{}), renewed: make(chan error, 1)}
		h, err := store.OpenSession(ctx, slow, name, store.SessionOptions{Holder: "A", LeaseTTL: 1500 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		held, release, err := h.HoldLease(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer release()
		<-slow.stalled
		waitExpired(t, b, name, "B")
		lb, err := b.AcquireLease(ctx, name, "B", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.AppendLeased(ctx, lb, "", msg("B's, under its lease")); err != nil {
			t.Fatal(err)
		}
		if err := b.ReleaseLease(ctx, lb); err != nil {
			t.Fatal(err)
		}
		close(slow.resume)
		if err := <-slow.renewed; err == nil {
			t.Error("A's late renewal took the lease again after B had held and used it")
		}
		if err := h.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := h.Append(msg("A's, under the lost lease")); !errors.Is(err, store.ErrLeaseLost) {
			t.Fatalf("A's append after the late renewal: %v, want ErrLeaseLost", err)
		}
		select {
		case <-held.Done():
		case <-time.After(time.Minute):
			t.Fatal("the lease was taken over, and the context under it did not end")
		}
		if cause := context.Cause(held); !errors.Is(cause, store.ErrLeaseLost) {
			t.Fatalf("cause %v, want ErrLeaseLost", cause)
		}
	})

	t.Run("LeaseTakeover", func(t *testing.T) {
		s := open(t)()
		name := "s/take.jsonl"
		mustCreate(t, s, name, header)
		h := mustOpen(t, s, name, "B")
		for i := range 8 {
			if _, err := h.Append(msg(Prose(i, 1200))); err != nil {
				t.Fatal(err)
			}
		}
		// Host A took the lease and died: nobody renews or releases it.
		dead, err := s.AcquireLease(ctx, name, "A", 400*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		eb := engine.New(h, engine.Options{Summarizer: builtin.New(builtin.Options{}), Settings: CompactSettings()})
		if _, err := eb.Compact(ctx, ""); !errors.Is(err, engine.ErrCompactingElsewhere) {
			t.Fatalf("compaction while A's lease runs: %v, want ErrCompactingElsewhere", err)
		}
		waitExpired(t, s, name, "probe")
		if _, err := eb.Compact(ctx, ""); err != nil {
			t.Fatalf("compaction after A's lease expired: %v", err)
		}
		// A's late commit is refused.
		last := store.LastID(mustLoad(t, s, name))
		if _, err := s.AppendLeased(ctx, dead, last, msg("zombie")); !errors.Is(err, store.ErrLeaseLost) {
			t.Fatalf("the dead host's commit: %v, want ErrLeaseLost", err)
		}
		if n := countType(mustLoad(t, s, name), session.TypeCompaction); n != 1 {
			t.Fatalf("%d compactions, want 1", n)
		}
	})
}

func mustCreate(t *testing.T, s store.Store, name, data string) {
	t.Helper()
	if err := s.Create(context.Background(), name, []byte(data)); err != nil {
		t.Fatal(err)
	}
}

func mustOpen(t *testing.T, s store.Store, name, holder string) *store.Session {
	t.Helper()
	h, err := store.OpenSession(context.Background(), s, name, store.SessionOptions{Holder: holder, LeaseTTL: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func mustLoad(t *testing.T, s store.Store, name string) *session.File {
	t.Helper()
	f, err := s.Load(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func roots(f *session.File) int {
	n := 0
	for _, e := range f.Entries {
		if e.ParentID == "" {
			n++
		}
	}
	return n
}

func countType(f *session.File, typ string) int {
	n := 0
	for _, e := range f.Entries {
		if e.Type == typ {
			n++
		}
	}
	return n
}

// waitExpired polls until probe can take the session's lease (the
// holder's has expired), then releases it again.
func waitExpired(t *testing.T, s store.Store, name, probe string) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(30 * time.Second)
	for {
		l, err := s.AcquireLease(ctx, name, probe, time.Millisecond)
		if err == nil {
			s.ReleaseLease(ctx, l)
			return
		}
		if !errors.Is(err, store.ErrLeaseHeld) || time.Now().After(deadline) {
			t.Fatalf("waiting for the lease to expire: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func toolResult(id, output string) session.Draft {
	m := map[string]any{"role": "toolResult", "toolCallId": id, "toolName": "bash",
		"content": []any{map[string]any{"type": "text", "text": output}}, "isError": false, "timestamp": 1}
	return session.Draft{Type: session.TypeMessage, Fields: map[string]any{"message": m}}
}

// Prose is n characters of text (n/4 tokens by estimate) for message i.
func Prose(i, n int) string {
	s := strings.Repeat(fmt.Sprintf("turn %d works on internal/pkg/file%d.go. ", i, i), n/40+1)
	return s[:n]
}

// CompactSettings make a few long messages (Prose of 1200) worth
// compacting.
func CompactSettings() engine.Settings {
	return engine.Settings{Enabled: true, ReserveTokens: 2000, KeepRecentTokens: 300, ContextWindow: 10000}
}

// blockingSummarizer is the built-in summarizer, held until finish is
// closed once it started: a compaction caught in the middle.
type blockingSummarizer struct {
	started, finish chan struct{}
	once            sync.Once
}

func (b *blockingSummarizer) Summarize(ctx context.Context, req summary.Request) (summary.Result, error) {
	b.once.Do(func() { close(b.started) })
	select {
	case <-b.finish:
	case <-ctx.Done():
		return summary.Result{}, ctx.Err()
	}
	return builtin.New(builtin.Options{}).Summarize(ctx, req)
}

// stalledRenewal is a Store whose lease calls for holder after the first
// (the renewals) wait: the first says so on stalled and waits for resume,
// then reports its result on renewed.
type stalledRenewal struct {
	store.Store
	holder          string
	calls           int
	mu              sync.Mutex
	stalled, resume chan struct{}
	renewed         chan error
}

func (s *stalledRenewal) stall(holder string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if holder != s.holder {
		return false
	}
	s.calls++
	return s.calls == 2
}

func (s *stalledRenewal) RenewLease(ctx context.Context, lease store.Lease, ttl time.Duration) (store.Lease, error) {
	if !s.stall(lease.Holder) {
		return s.Store.RenewLease(ctx, lease, ttl)
	}
	close(s.stalled)
	<-s.resume
	l, err := s.Store.RenewLease(context.Background(), lease, ttl)
	s.renewed <- err
	return l, err
}

func (s *stalledRenewal) AcquireLease(ctx context.Context, name, holder string, ttl time.Duration) (store.Lease, error) {
	if !s.stall(holder) {
		return s.Store.AcquireLease(ctx, name, holder, ttl)
	}
	close(s.stalled)
	<-s.resume
	l, err := s.Store.AcquireLease(context.Background(), name, holder, ttl)
	s.renewed <- err
	return l, err
}
