package session_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/pith-dev/pith/core/session"
)

// TestMigrateV1MatchesPi migrates each v1 fixture in memory and compares it
// with the v3 file pi wrote from it: same entries, same parent links and
// compaction targets (by line, since ids are invented), same other fields.
func TestMigrateV1MatchesPi(t *testing.T) {
	for _, pair := range [][2]string{
		{"before-compaction.jsonl", "before-compaction.v3.jsonl"},
		{"large-session.jsonl", "large-session.v3.jsonl"},
	} {
		t.Run(pair[0], func(t *testing.T) {
			v1, err := session.Load(fixture(t, pair[0]))
			if err != nil {
				t.Fatal(err)
			}
			v3, err := session.Load(fixture(t, pair[1]))
			if err != nil {
				t.Fatal(err)
			}
			if !v1.Migrated || v1.Header.Version != 3 {
				t.Fatalf("v1 not migrated: %+v", v1.Header)
			}
			if len(v1.Entries) != len(v3.Entries) {
				t.Fatalf("entries %d vs %d", len(v1.Entries), len(v3.Entries))
			}
			lineOf := func(f *session.File) map[string]int {
				m := map[string]int{}
				for _, e := range f.Entries {
					m[e.ID] = e.Line
				}
				return m
			}
			l1, l3 := lineOf(v1), lineOf(v3)
			norm := func(e *session.Entry, lines map[string]int) map[string]any {
				var m map[string]any
				if err := json.Unmarshal(e.Raw, &m); err != nil {
					t.Fatal(err)
				}
				for _, k := range []string{"id", "parentId", "firstKeptEntryId"} {
					if s, ok := m[k].(string); ok {
						m[k] = lines[s]
					}
				}
				return m
			}
			for i := range v1.Entries {
				a, b := norm(v1.Entries[i], l1), norm(v3.Entries[i], l3)
				if !reflect.DeepEqual(a, b) {
					t.Fatalf("entry %d differs:\n%v\n%v", i, a, b)
				}
			}
		})
	}
}
