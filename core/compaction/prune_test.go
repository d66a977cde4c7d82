package compaction

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pith-dev/pith/core/tokens"
	"github.com/pith-dev/pith/store/files"
	"github.com/tidwall/gjson"
)

func TestPlanPrune(t *testing.T) {
	s := PruneSettings{Protect: 1000, Minimum: 500, ProtectedTools: []string{"skill", "read"}}
	tests := []struct {
		name      string
		build     func(b *builder) []string // ids expected in the plan, newest first
		wantEmpty bool
	}{
		{"newest output protected, older pruned", func(b *builder) []string {
			b.user(1)
			b.assistant(1, "c1:bash", "c2:bash", "c3:bash", "c4:bash")
			r1 := b.result("c1", "bash", 600)
			r2 := b.result("c2", "bash", 600)
			b.result("c3", "bash", 600)
			b.result("c4", "bash", 300)
			// r4 (300) and r3 (600) fill 900 of 1000; r2 crosses the window.
			return []string{r2, r1}
		}, false},
		{"protected tools are never pruned", func(b *builder) []string {
			b.user(1)
			b.assistant(1, "c1:read", "c2:skill", "c3:bash", "c4:bash")
			b.result("c1", "read", 5000)
			b.result("c2", "skill", 5000)
			r3 := b.result("c3", "bash", 2000)
			b.result("c4", "bash", 1000)
			return []string{r3}
		}, false},
		{"below the minimum saving nothing is pruned", func(b *builder) []string {
			b.user(1)
			b.assistant(1, "c1:bash", "c2:bash")
			b.result("c1", "bash", 400)
			b.result("c2", "bash", 1000)
			return nil
		}, true},
		{"outputs before the last compaction's kept part are not in the context", func(b *builder) []string {
			b.user(1)
			b.assistant(1, "c1:bash")
			b.result("c1", "bash", 5000)
			u := b.user(1)
			b.compaction(u, "s", "")
			b.assistant(1, "c2:bash", "c3:bash")
			r2 := b.result("c2", "bash", 1000)
			b.result("c3", "bash", 1000)
			return []string{r2}
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := &builder{}
			want := tt.build(b)
			path := b.path(t)
			plan := PlanPrune(path, s)
			if tt.wantEmpty {
				if len(plan.Items) != 0 || plan.Saving != 0 {
					t.Fatalf("plan %+v", plan)
				}
				return
			}
			var got []string
			total := 0
			for _, it := range plan.Items {
				got = append(got, it.EntryID)
				e := path[indexOf(t, path, it.EntryID)]
				n := tokens.Estimate(e.MessageRaw())
				if it.Tokens != n || it.Saving != n-tokens.EstimateText(PruneNotice(n)) {
					t.Fatalf("item %+v, estimate %d", it, n)
				}
				total += it.Saving
			}
			if strings.Join(got, ",") != strings.Join(want, ",") || plan.Saving != total {
				t.Fatalf("pruned %v (saving %d), want %v", got, plan.Saving, want)
			}
		})
	}
}

// TestPruneAndRestore prunes a session on disk through a Store, checks
// that only the pruned lines changed, then restores it byte for byte.
func TestPruneAndRestore(t *testing.T) {
	b := &builder{}
	b.user(1)
	b.assistant(1, "c1:bash", "c2:bash", "c3:bash")
	r1 := b.result("c1", "bash", 3000)
	r2 := b.msg(`{"role":"toolResult","toolCallId":"c2","toolName":"bash","content":"` + text(3000) + `","extra":{"keep":"me"},"isError":false}`)
	b.result("c3", "bash", 1000)
	b.assistant(1)
	orig := b.data()

	dir := t.TempDir()
	sessPath := filepath.Join(dir, "s.jsonl")
	if err := os.WriteFile(sessPath, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	store, err := files.Open(sessPath, files.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	path := store.Tree().Path(store.Leaf())
	plan := PlanPrune(path, PruneSettings{Protect: 1000, Minimum: 100})
	if len(plan.Items) != 2 {
		t.Fatalf("plan %+v", plan)
	}
	archive := ArchivePath(sessPath)
	now := time.UnixMilli(1767225600000)
	applied, err := Prune(store, PruneSettings{Protect: 1000, Minimum: 100}, now)
	if err != nil || len(applied.Items) != 2 {
		t.Fatalf("pruned %+v: %v", applied, err)
	}
	arch, err := os.ReadFile(archive)
	if err != nil || bytes.Count(arch, []byte("\n")) != 2 {
		t.Fatalf("archive: %v %q", err, arch)
	}
	after, err := os.ReadFile(sessPath)
	if err != nil {
		t.Fatal(err)
	}
	origLines, afterLines := bytes.Split(orig, []byte("\n")), bytes.Split(after, []byte("\n"))
	if len(origLines) != len(afterLines) {
		t.Fatalf("%d lines became %d", len(origLines), len(afterLines))
	}
	changed := 0
	for i := range origLines {
		if bytes.Equal(origLines[i], afterLines[i]) {
			continue
		}
		changed++
		r := gjson.ParseBytes(afterLines[i])
		id := r.Get("id").String()
		if id != r1 && id != r2 {
			t.Fatalf("line %d (%s) changed", i+1, id)
		}
		n := tokens.Estimate([]byte(gjson.GetBytes(origLines[i], "message").Raw))
		notice := PruneNotice(n)
		c := r.Get("message.content")
		if (id == r1 && c.Get("0.text").String() != notice) || (id == r2 && c.String() != notice) {
			t.Fatalf("content %s, want the notice %q", c.Raw, notice)
		}
		if r.Get("message.prunedAt").Int() != now.UnixMilli() || (id == r2 && r.Get("message.extra.keep").String() != "me") {
			t.Fatalf("line %s", afterLines[i])
		}
	}
	if changed != 2 {
		t.Fatalf("%d lines changed", changed)
	}
	// Pruned outputs are not pruned again.
	if p := PlanPrune(store.Tree().Path(store.Leaf()), PruneSettings{Protect: 1000, Minimum: 100}); len(p.Items) != 0 {
		t.Fatalf("second plan %+v", p)
	}

	res, err := Restore(store)
	if err != nil || res.Restored != 2 || len(res.Refused) != 0 {
		t.Fatalf("restored %+v: %v", res, err)
	}
	final, err := os.ReadFile(sessPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(final, orig) {
		t.Fatal("restored session differs from the original")
	}
}

func TestRestoreWithoutArchive(t *testing.T) {
	b := &builder{}
	b.user(1)
	f := b.file(t)
	got, res, err := RestoreFile(f, nil)
	if err != nil || res.Restored != 0 || got != f {
		t.Fatalf("%v %+v %v", got, res, err)
	}
}
