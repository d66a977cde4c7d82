package branch

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/core/tokens"
	"github.com/pith-dev/pith/store/files"
)

type piView struct {
	File     string `json:"file"`
	LeafID   string `json:"leafId"`
	Messages []struct {
		Role   string `json:"role"`
		Tokens int    `json:"tokens"`
	} `json:"messages"`
}

// piViews runs testdata/pi-leaf.mjs on files: pi's own loader and
// buildSessionContext. It skips the test when node or the pinned pi
// package (conformance/node_modules, `cd conformance && npm ci`) is missing.
func piViews(t *testing.T, files []string) []piView {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not found; pi's view of navigated files is not checked")
	}
	if _, err := os.Stat(filepath.Join("..", "..", "conformance", "node_modules", "@mariozechner", "pi-coding-agent")); err != nil {
		t.Skip("pi is not installed (cd conformance && npm ci); pi's view of navigated files is not checked")
	}
	cmd := exec.Command(node, append([]string{filepath.Join("testdata", "pi-leaf.mjs")}, files...)...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("pi-leaf.mjs: %v", err)
	}
	var views []piView
	if err := json.Unmarshal(out, &views); err != nil {
		t.Fatalf("pi-leaf.mjs output: %v", err)
	}
	if len(views) != len(files) {
		t.Fatalf("pi-leaf.mjs answered for %d of %d files", len(views), len(files))
	}
	return views
}

// navigation is one Navigate call of TestPiReadsNavigatedFiles; supplied
// summaries stand in for a summarizer so the test needs no model.
type navigation struct {
	target  string
	summary string
	label   string
}

// TestPiReadsNavigatedFiles navigates small and generated sessions in every
// way Navigate can write (leaf marker, label, summary, root marker, chains
// of navigations followed by a new message) and checks that pi, opening the
// file, continues from the same leaf with the same context as Pith.
func TestPiReadsNavigatedFiles(t *testing.T) {
	type scenario struct {
		name  string
		lines []string // nil: a generated file
		gen   string
		navs  []navigation
		// appendUser adds a user message at the leaf afterwards.
		appendUser bool
	}
	scenarios := []scenario{
		{name: "marker", lines: treeLines, navs: []navigation{{target: "000000a2"}}},
		{name: "marker at the root", lines: treeLines, navs: []navigation{{target: "000000u1"}}},
		{name: "label", lines: treeLines, navs: []navigation{{target: "000000u2", label: "again"}}},
		{name: "summary", lines: treeLines, navs: []navigation{{target: "000000a2", summary: "went elsewhere"}}},
		{name: "summary at the root", lines: treeLines, navs: []navigation{{target: "000000u1", summary: "all of it"}}},
		{name: "chain", lines: treeLines, appendUser: true, navs: []navigation{
			{target: "000000a2"}, {target: "000000cm", summary: "A"}, {target: "000000u1"}, {target: "000000a3", label: "back"},
		}},
	}
	// Generated sessions: navigate to the targets the pi golden picked.
	seen := map[string]bool{}
	for _, g := range loadPiCases(t) {
		key := g.File + g.TargetID
		if seen[key] || g.TargetRelation == "self" || len(scenarios) > 60 {
			continue
		}
		seen[key] = true
		nav := navigation{target: g.TargetID}
		switch len(scenarios) % 3 {
		case 1:
			nav.summary = "summary of " + g.TargetID
		case 2:
			nav.label = "label " + g.TargetID
		}
		scenarios = append(scenarios, scenario{name: g.File + "/" + g.TargetRelation + "/" + g.TargetID, gen: g.File,
			navs: []navigation{nav}, appendUser: len(scenarios)%2 == 0})
	}

	dir := t.TempDir()
	paths := make([]string, len(scenarios))
	type pithView struct {
		leaf  string
		roles []string
		toks  []int
	}
	views := make([]pithView, len(scenarios))
	for i, sc := range scenarios {
		path := filepath.Join(dir, fmt.Sprintf("s%03d.jsonl", i))
		paths[i] = path
		src := ""
		if sc.lines != nil {
			src = writeSession(t, sc.lines)
		} else {
			src = copyGenerated(t, sc.gen)
		}
		if err := os.Rename(src, path); err != nil {
			t.Fatal(err)
		}
		store, err := files.Open(path, files.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, nav := range sc.navs {
			opts := NavigateOptions{Summarize: nav.summary != "", Label: nav.label}
			if nav.summary != "" {
				opts.BeforeTree = func(context.Context, BeforeTreeEvent) (BeforeTreeResult, error) {
					return BeforeTreeResult{Summary: &SuppliedSummary{Summary: nav.summary}}, nil
				}
			}
			if _, err := Navigate(context.Background(), store, nav.target, opts); err != nil {
				t.Fatalf("%s: %v", sc.name, err)
			}
		}
		if sc.appendUser {
			if _, err := store.Append(session.Draft{Type: session.TypeMessage,
				Fields: json.RawMessage(`{"message":{"role":"user","content":"continue from here","timestamp":9}}`)}); err != nil {
				t.Fatal(err)
			}
		}
		leaf := leafID(store)
		store.Close()
		reopened, err := files.Open(path, files.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if leafID(reopened) != leaf {
			t.Errorf("%s: reopened leaf %q, Pith's leaf was %s", sc.name, leafID(reopened), leaf)
		}
		v := pithView{leaf: leaf, roles: []string{}, toks: []int{}}
		for _, m := range reopened.Tree().BuildContext(leaf).Messages {
			v.roles = append(v.roles, m.Role)
			v.toks = append(v.toks, tokens.Estimate(m.Raw))
		}
		views[i] = v
		reopened.Close()
	}

	for i, pv := range piViews(t, paths) {
		sc, v := scenarios[i], views[i]
		if pv.LeafID != v.leaf {
			t.Errorf("%s: pi's leaf %s, Pith's %s", sc.name, pv.LeafID, v.leaf)
		}
		roles, toks := []string{}, []int{}
		for _, m := range pv.Messages {
			roles = append(roles, m.Role)
			toks = append(toks, m.Tokens)
		}
		if !slices.Equal(roles, v.roles) || !slices.Equal(toks, v.toks) {
			t.Errorf("%s: pi's context %v %v, Pith's %v %v", sc.name, roles, toks, v.roles, v.toks)
		}
	}
	t.Logf("%d navigated files read by pi", len(paths))
}
