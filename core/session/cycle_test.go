package session_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/pith-dev/pith/core/session"
)

// entries parses "id<parent" pairs ("a<" is a root) into a file.
func entries(t *testing.T, links ...string) *session.File {
	t.Helper()
	var b strings.Builder
	b.WriteString(testHeader + "\n")
	for _, l := range links {
		id, parent, _ := strings.Cut(l, "<")
		p := "null"
		if parent != "" {
			p = `"` + parent + `"`
		}
		fmt.Fprintf(&b, `{"type":"custom","id":%q,"parentId":%s,"customType":"x"}`+"\n", id, p)
	}
	f, err := session.Parse([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestCycles(t *testing.T) {
	for _, tc := range []struct {
		name  string
		links []string
		want  string // "id/len" of each cycle found
	}{
		{"none", []string{"a<", "b<a", "c<b", "d<a"}, ""},
		{"dangling parent", []string{"a<zz", "b<a"}, ""},
		{"parent after child, no loop", []string{"b<a", "a<"}, ""},
		{"self", []string{"a<", "b<b"}, "b/1"},
		{"all in one loop", []string{"a<c", "b<a", "c<b"}, "a/3"},
		{"loop with descendants", []string{"r<", "a<b", "b<a", "x<a", "y<x"}, "a/2"},
		{"two loops", []string{"a<b", "b<a", "c<", "d<e", "e<d"}, "a/2 d/2"},
		{"tail into a loop", []string{"t<a", "a<b", "b<a"}, "a/2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tree := session.NewTree(entries(t, tc.links...).Entries)
			at, length := tree.Cycles()
			var got []string
			for i, e := range at {
				got = append(got, fmt.Sprintf("%s/%d", e.ID, length[i]))
			}
			if strings.Join(got, " ") != tc.want {
				t.Errorf("cycles %v, want %q", got, tc.want)
			}
			// Walking Children from Roots reaches every entry.
			seen := map[*session.Entry]bool{}
			stack := tree.Roots()
			for len(stack) > 0 {
				e := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				if !seen[e] {
					seen[e] = true
					stack = append(stack, tree.Children(e.ID)...)
				}
			}
			if len(seen) != len(tree.Entries) {
				t.Errorf("walk from Roots reached %d of %d entries", len(seen), len(tree.Entries))
			}
			// Every walk ends, on a loop too, and PathCycle names the loop
			// exactly when the walk was cut by one.
			for _, e := range tree.Entries {
				p := tree.Path(e)
				if len(p) == 0 || len(p) > len(tree.Entries) {
					t.Errorf("path of %s: %d entries", e.ID, len(p))
				}
				cut := p[0].ParentID != "" && tree.Has(p[0].ParentID)
				at, n := tree.PathCycle(p)
				if (at != nil) != cut || (at != nil && (tc.want == "" || n < 1)) {
					t.Errorf("path of %s: PathCycle = %v/%d, cut %v", e.ID, at, n, cut)
				}
			}
		})
	}
}

// TestLogWarnings pins the one warning format: an hclog record with the
// file, the line and the reason, for a skipped line and for a cycle.
func TestLogWarnings(t *testing.T) {
	f := entries(t, "a<b", "b<a")
	var buf bytes.Buffer
	log := hclog.New(&hclog.LoggerOptions{Name: "pith", Level: hclog.Warn, Output: &buf, DisableTime: true})
	session.LogWarnings(log, "s.jsonl", []session.Warning{{Line: 3, Reason: "malformed JSON: unterminated string"}})
	session.LogWarnings(log, "s.jsonl", session.CycleWarnings(session.NewTree(f.Entries)))
	want := `[WARN]  pith: skipped a line of the session file: file=s.jsonl line=3 reason="malformed JSON: unterminated string"` + "\n" +
		`[WARN]  pith: parentId cycle in the session file: file=s.jsonl line=2 reason="cycle at entry \"a\": its parentId links loop back to it through 2 entries; paths through it stop there"` + "\n"
	if buf.String() != want {
		t.Errorf("got\n%s\nwant\n%s", buf.String(), want)
	}
}

// BenchmarkCycles measures the cycle check on a 100 000-entry session
// without loops, the cost `pith context` and `pith tree` pay for it.
func BenchmarkCycles(b *testing.B) {
	path, _ := benchSession(b)
	f, err := session.Load(path)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if at, _ := session.NewTree(f.Entries).Cycles(); len(at) != 0 {
			b.Fatal("cycles in a generated session")
		}
	}
}
