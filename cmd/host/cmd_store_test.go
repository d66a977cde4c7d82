package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/internal/pgtest"
)

// TestExportImportRoundTrip moves the pi fixtures and the demo session
// into each store and out again: the bytes must not change, and the
// exported file gives the same `pith context` as the original.
func TestExportImportRoundTrip(t *testing.T) {
	files := []string{"../../examples/demo-session.jsonl"}
	if m, _ := filepath.Glob(filepath.Join(fixtureDir, "*.jsonl")); len(m) > 0 {
		files = append(files, m...)
	} else {
		t.Logf("no pi fixtures at %s: round-tripping the demo session only", fixtureDir)
	}
	stores := map[string]string{"files": t.TempDir()}
	if m := pgtest.Missing(); m == "" {
		stores["postgres"] = pgtest.NewDatabase(t)
	} else {
		t.Logf("files store only, no PostgreSQL: %s", m)
	}
	for kind, url := range stores {
		for _, file := range files {
			name := "team/" + filepath.Base(file)
			if out, errs, code := runCLI(t, "import", "--store", url, file, name); code != 0 {
				t.Fatalf("%s: import %s: %s%s", kind, file, out, errs)
			}
			if _, errs, code := runCLI(t, "import", "--store", url, file, name); code == 0 {
				t.Fatalf("%s: a second import over %s succeeded", kind, name)
			} else if !bytes.Contains([]byte(errs), []byte("already exists")) {
				t.Fatalf("%s: second import: %s", kind, errs)
			}
			out := filepath.Join(t.TempDir(), "out.jsonl")
			if _, errs, code := runCLI(t, "export", "--store", url, "--out", out, name); code != 0 {
				t.Fatalf("%s: export %s: %s", kind, name, errs)
			}
			want, _ := os.ReadFile(file)
			got, _ := os.ReadFile(out)
			if !bytes.Equal(got, want) {
				t.Fatalf("%s: %s did not round-trip byte for byte (%d bytes, want %d)", kind, file, len(got), len(want))
			}
			stdout, _, code := runCLI(t, "export", "--store", url, name)
			if code != 0 || stdout != string(want) {
				t.Fatalf("%s: export to stdout differs", kind)
			}
			c1, _, _ := runCLI(t, "context", "--json", file)
			c2, _, _ := runCLI(t, "context", "--json", out)
			if c1 != c2 {
				t.Fatalf("%s: pith context of the exported %s differs", kind, file)
			}
			// The inspecting commands read the stored session directly.
			c3, errs, code := runCLI(t, "context", "--json", "--store", url, name)
			if code != 0 || c3 != c1 {
				t.Fatalf("%s: pith context --store %s differs from the file's (%s)", kind, name, errs)
			}
			t1, _, _ := runCLI(t, "tree", "--json", file)
			t2, errs, code := runCLI(t, "tree", "--json", "--store", url, name)
			if code != 0 || t1 != t2 {
				t.Fatalf("%s: pith tree --store %s differs from the file's (%s)", kind, name, errs)
			}
		}
	}
	if _, errs, code := runCLI(t, "export", "--store", t.TempDir(), "../etc/passwd.jsonl"); code == 0 || !bytes.Contains([]byte(errs), []byte("invalid session path")) {
		t.Fatalf("export of an unsafe name: code %d, %s", code, errs)
	}
}

// storesForTest is the files store, and PostgreSQL when its binaries are
// here (said in the log when not).
func storesForTest(t *testing.T) map[string]string {
	stores := map[string]string{"files": t.TempDir()}
	if m := pgtest.Missing(); m == "" {
		stores["postgres"] = pgtest.NewDatabase(t)
	} else {
		t.Logf("files store only, no PostgreSQL: %s", m)
	}
	return stores
}

// withoutLeafID drops the "leafId" of a context JSON line and the
// timestamp of the summary: new entries get a random id and the time
// they were written; the rest must be equal.
func withoutLeafID(t *testing.T, js string) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(js), &m); err != nil {
		t.Fatalf("%v: %.200s", err, js)
	}
	delete(m, "leafId")
	// After a compaction its summary is the first message.
	if msgs, _ := m["messages"].([]any); len(msgs) > 0 {
		if msg, ok := msgs[0].(map[string]any); ok {
			delete(msg, "timestamp")
		}
	}
	out, _ := json.Marshal(m)
	return string(out)
}

// emptyConfig is a configuration file with nothing in it: the defaults,
// whatever $PITH_CONFIG says.
func emptyConfig(t *testing.T) string {
	p := filepath.Join(t.TempDir(), "pith.yaml")
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func mustCLI(t *testing.T, args ...string) string {
	t.Helper()
	out, errs, code := runCLI(t, args...)
	if code != 0 {
		t.Fatalf("pith %s: exit %d: %s%s", strings.Join(args, " "), code, out, errs)
	}
	return out
}

// TestCompactStoreMatchesFile: `pith compact --store` on an imported
// session leaves the same context (`pith context --llm --store`) as
// `pith compact` on the file.
func TestCompactStoreMatchesFile(t *testing.T) {
	files := []string{"../../examples/demo-session.jsonl"}
	if _, err := os.Stat(filepath.Join(fixtureDir, "before-compaction.v3.jsonl")); err == nil {
		files = append(files, filepath.Join(fixtureDir, "before-compaction.v3.jsonl"))
	} else {
		t.Logf("no pi fixtures at %s: the demo session only", fixtureDir)
	}
	for kind, url := range storesForTest(t) {
		for _, file := range files {
			name := "team/" + filepath.Base(file)
			mustCLI(t, "import", "--store", url, file, name)
			copyPath := filepath.Join(t.TempDir(), "s.jsonl")
			data, _ := os.ReadFile(file)
			if err := os.WriteFile(copyPath, data, 0o644); err != nil {
				t.Fatal(err)
			}
			flags := []string{"--keep-recent-tokens", "2000", "--config", emptyConfig(t)}
			mustCLI(t, append([]string{"compact", copyPath}, flags...)...)
			mustCLI(t, append([]string{"compact", "--store", url, name}, flags...)...)
			want := withoutLeafID(t, mustCLI(t, "context", "--llm", copyPath))
			got := withoutLeafID(t, mustCLI(t, "context", "--llm", "--store", url, name))
			if got != want {
				t.Fatalf("%s: %s: the context after compact --store differs from the file's", kind, file)
			}
		}
	}
}

// TestStoreCommands runs label, navigate, prune (and --restore) and
// migrate on stored sessions.
func TestStoreCommands(t *testing.T) {
	for kind, url := range storesForTest(t) {
		t.Run(kind, func(t *testing.T) {
			name := "t/demo.jsonl"
			mustCLI(t, "import", "--store", url, "../../examples/demo-session.jsonl", name)
			f, err := session.Load("../../examples/demo-session.jsonl")
			if err != nil {
				t.Fatal(err)
			}
			target := f.Entries[3].ID

			mustCLI(t, "label", "--store", url, name, target, "checkpoint")
			tree := mustCLI(t, "tree", "--json", "--store", url, name)
			if !strings.Contains(tree, "checkpoint") {
				t.Fatalf("the label is not in the tree: %.300s", tree)
			}

			out := mustCLI(t, "navigate", "--store", url, name, "--to", target, "--no-summarize", "--json")
			var nav struct {
				NewLeafID string `json:"newLeafId"`
			}
			if err := json.Unmarshal([]byte(out), &nav); err != nil || nav.NewLeafID == "" {
				t.Fatalf("navigate: %v, %s", err, out)
			}
			ctx := mustCLI(t, "context", "--json", "--store", url, name)
			if !strings.Contains(ctx, `"leafId":"`+nav.NewLeafID+`"`) {
				t.Fatalf("after navigate the stored session's leaf is not %s: %s", nav.NewLeafID, ctx)
			}

			// Back to the end, then prune and restore: byte for byte.
			last := f.Entries[len(f.Entries)-1].ID
			mustCLI(t, "navigate", "--store", url, name, "--to", last, "--no-summarize")
			before := mustCLI(t, "export", "--store", url, name)
			cfg := emptyConfig(t)
			out = mustCLI(t, "prune", "--store", url, name, "--protect", "0", "--minimum", "1", "--protected-tools", "", "--json", "--config", cfg)
			if !strings.Contains(out, `"pruned":`) || strings.Contains(out, `"pruned":0`) {
				t.Fatalf("prune --store pruned nothing: %s", out)
			}
			if mustCLI(t, "export", "--store", url, name) == before {
				t.Fatal("prune --store changed nothing")
			}
			mustCLI(t, "prune", "--restore", "--store", url, name, "--config", cfg)
			if mustCLI(t, "export", "--store", url, name) != before {
				t.Fatal("prune --restore --store did not give the session back byte for byte")
			}
			// Another host holds the lease: compact and prune are refused
			// (exit 5), nothing written.
			st, err := openStoreURL(context.Background(), url)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			lease, err := st.AcquireLease(context.Background(), name, "other-host", time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			held := mustCLI(t, "export", "--store", url, name)
			if _, errs, code := runCLI(t, "compact", "--store", url, name, "--config", cfg); code != exitBusy || !strings.Contains(errs, "another host is compacting this session") {
				t.Fatalf("compact while another host holds the lease: exit %d, %s", code, errs)
			}
			if _, errs, code := runCLI(t, "prune", "--store", url, name, "--protect", "0", "--minimum", "1", "--config", cfg); code != exitBusy {
				t.Fatalf("prune while another host holds the lease: exit %d, %s", code, errs)
			}
			if mustCLI(t, "export", "--store", url, name) != held {
				t.Fatal("a refused compact or prune changed the session")
			}
			if err := st.ReleaseLease(context.Background(), lease); err != nil {
				t.Fatal(err)
			}

			mustCLI(t, "import", "--store", url, "../../examples/demo-session.jsonl", "t/fresh.jsonl")
			if out := mustCLI(t, "prune", "--restore", "--store", url, "t/fresh.jsonl", "--config", cfg); !strings.Contains(out, "nothing to restore") {
				t.Fatalf("restore of a session never pruned: %s", out)
			}

			old := filepath.Join(fixtureDir, "before-compaction.jsonl")
			if _, err := os.Stat(old); err != nil {
				t.Logf("no v1 pi fixture: migrate --store not tested (%v)", err)
				return
			}
			mustCLI(t, "import", "--store", url, old, "t/v1.jsonl")
			if _, errs, code := runCLI(t, "compact", "--store", url, "t/v1.jsonl", "--config", cfg); code == 0 || !strings.Contains(errs, "migrate --in-place --store") {
				t.Fatalf("compact of an old-format stored session: exit %d, %s", code, errs)
			}
			want := mustCLI(t, "migrate", old)
			if got := mustCLI(t, "migrate", "--store", url, "t/v1.jsonl"); got != want {
				t.Fatal("migrate --store to stdout differs from migrate FILE")
			}
			mustCLI(t, "migrate", "--in-place", "--store", url, "t/v1.jsonl")
			if got := mustCLI(t, "export", "--store", url, "t/v1.jsonl"); got != want {
				t.Fatal("migrate --in-place --store did not store what migrate FILE writes")
			}
		})
	}
}
