package compaction

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/store/files"
)

// compactable writes a session worth compacting and returns its path.
func compactable(t *testing.T) string {
	b := &builder{}
	for range 6 {
		b.user(100)
		b.assistant(100)
	}
	path := filepath.Join(t.TempDir(), "s.jsonl")
	writeSession(t, path, b.data())
	return path
}

func openStore(t *testing.T, path string) *files.Session {
	t.Helper()
	s, err := files.Open(path, files.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func prepare(t *testing.T, s *files.Session) (*Preparation, *Result) {
	t.Helper()
	prep, err := Prepare(s.Tree().Path(s.Leaf()), Settings{ReserveTokens: 1000, KeepRecentTokens: 250})
	if err != nil {
		t.Fatal(err)
	}
	prep.FileEntries = len(s.Tree().Entries)
	return prep, &Result{Summary: "SUM", FirstKeptEntryID: prep.FirstKeptEntryID, TokensBefore: prep.TokensBefore}
}

// TestCompactionParentedAtTrueLeaf: entries another process appends below
// the prepared leaf while the summary is made stay in the context: the
// compaction becomes the child of the newest.
func TestCompactionParentedAtTrueLeaf(t *testing.T) {
	path := compactable(t)
	s := openStore(t, path)
	prep, res := prepare(t, s)
	other := openStore(t, path)
	var last string
	for range 20 {
		es, err := other.Append(session.Draft{Type: session.TypeMessage, Fields: []byte(`{"message":{"role":"user","content":"late","timestamp":1}}`)})
		if err != nil {
			t.Fatal(err)
		}
		last = es[0].ID
	}
	e, ctx, err := Persist(s, prep, res, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if e.ParentID != last {
		t.Fatalf("compaction parented at %s, want the true leaf %s", e.ParentID, last)
	}
	late := 0
	for _, m := range ctx.Messages {
		if bytes.Contains(m.Raw, []byte(`"late"`)) {
			late++
		}
	}
	if late != 20 {
		t.Fatalf("%d of the 20 appended entries are in the context", late)
	}
}

// TestCompactionDiscardedOnOtherBranch: entries appended on another branch
// since the preparation discard the compaction; the file is unchanged.
func TestCompactionDiscardedOnOtherBranch(t *testing.T) {
	path := compactable(t)
	s := openStore(t, path)
	prep, res := prepare(t, s)
	other := openStore(t, path)
	root := other.Tree().Entries[0].ID
	if _, err := other.Append(session.Draft{Type: session.TypeCustom, Parent: &root, Fields: map[string]any{"customType": "elsewhere"}}); err != nil {
		t.Fatal(err)
	}
	before := mustReadFile(t, path)
	_, _, err := Persist(s, prep, res, false, nil)
	if !errors.Is(err, ErrDiscarded) || !errors.Is(err, session.ErrUnchanged) {
		t.Fatalf("err = %v", err)
	}
	if !bytes.Equal(mustReadFile(t, path), before) {
		t.Fatal("a discarded compaction changed the file")
	}
}

// TestConcurrentCompactionsOneLands: compactions prepared from the same
// state in separate Stores, committed at once: exactly one lands.
func TestConcurrentCompactionsOneLands(t *testing.T) {
	for round := range 20 {
		path := compactable(t)
		const n = 4
		stores := make([]*files.Session, n)
		preps := make([]*Preparation, n)
		results := make([]*Result, n)
		for i := range n {
			stores[i] = openStore(t, path)
			preps[i], results[i] = prepare(t, stores[i])
		}
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { _, _, errs[i] = Persist(stores[i], preps[i], results[i], false, nil) })
		}
		wg.Wait()
		landed := 0
		for _, err := range errs {
			switch {
			case err == nil:
				landed++
			case !errors.Is(err, ErrDiscarded):
				t.Fatalf("round %d: %v", round, err)
			}
		}
		f, err := session.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		compactions := 0
		for _, e := range f.Entries {
			if e.Type == session.TypeCompaction {
				compactions++
			}
		}
		if landed != 1 || compactions != 1 {
			t.Fatalf("round %d: %d landed, %d in the file", round, landed, compactions)
		}
	}
}

func mustReadFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestDuplicateIDsNeverPruned: two tool results sharing an id are never
// pruned; a unique one is, and restore puts it back by position.
func TestDuplicateIDsNeverPruned(t *testing.T) {
	b := &builder{}
	b.user(10)
	b.assistant(10, "c1:bash", "c2:bash", "c3:bash")
	d1 := b.result("c1", "bash", 3000)
	b.result("c2", "bash", 3000)
	b.result("c3", "bash", 3000)
	b.user(10)
	last := b.assistant(10)
	data := b.data()
	// A second entry with the first result's id, as a hostile client could
	// append, then a user line after the last assistant.
	lines := bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
	data = append(data, append(bytes.Clone(lines[3]), '\n')...)
	data = append(data, `{"type":"message","id":"0000ffff","parentId":"`+last+`","timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":"x","timestamp":1}}`+"\n"...)
	path := filepath.Join(t.TempDir(), "s.jsonl")
	writeSession(t, path, data)
	s := openStore(t, path)
	plan, err := Prune(s, PruneSettings{Protect: 100, Minimum: 1}, faultNow)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Items) != 2 {
		t.Fatalf("plan %+v, want the two unique results", plan)
	}
	for _, it := range plan.Items {
		if it.EntryID == d1 {
			t.Fatalf("pruned the duplicate id %s", d1)
		}
	}
	after := mustReadFile(t, path)
	for _, l := range bytes.Split(after, []byte("\n")) {
		if bytes.Contains(l, []byte(`"id":"`+d1+`"`)) && bytes.Contains(l, []byte("prunedAt")) {
			t.Fatalf("a duplicate-id entry was pruned: %s", l)
		}
	}
	if _, err := Restore(s); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(mustReadFile(t, path), data) {
		t.Fatal("restore did not give back the original")
	}
}

// TestRestoreRefusesForgedRecord: a record whose hash does not match is
// refused by name; the others are restored.
func TestRestoreRefusesForgedRecord(t *testing.T) {
	b := &builder{}
	b.user(10)
	b.assistant(10, "c1:bash", "c2:bash", "c3:bash")
	b.result("c1", "bash", 3000)
	r2 := b.result("c2", "bash", 3000)
	b.result("c3", "bash", 1000)
	b.user(10)
	data := b.data()
	path := filepath.Join(t.TempDir(), "s.jsonl")
	writeSession(t, path, data)
	s := openStore(t, path)
	if p, err := Prune(s, PruneSettings{Protect: 1000, Minimum: 1}, faultNow); err != nil || len(p.Items) != 2 {
		t.Fatalf("%+v %v", p, err)
	}
	arch := mustReadFile(t, path+ArchiveSuffix)
	i := bytes.Index(arch, []byte(`"id":"`+r2+`"`))
	j := bytes.Index(arch[i:], []byte("xxxx"))
	arch[i+j] = 'Y' // change one byte of r2's original
	writeSession(t, path+ArchiveSuffix, arch)
	res, err := Restore(s)
	if err != nil {
		t.Fatal(err)
	}
	if res.Restored != 1 || len(res.Refused) != 1 || res.Refused[0].ID != r2 {
		t.Fatalf("%+v", res)
	}
}
