package session_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/pith-dev/pith/core/jsondepth"
	"github.com/pith-dev/pith/core/session"
)

const testHeader = `{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}`

// deepEntry is a custom entry whose data nests arrays so that the whole
// line is depth levels deep (the entry object itself is one).
func deepEntry(id string, depth int) string {
	n := depth - 1
	return `{"type":"custom","id":"` + id + `","parentId":null,"customType":"x","data":` +
		strings.Repeat("[", n) + `"[{"` + strings.Repeat("]", n) + `}`
}

// TestNestingLimit: a line nested exactly jsondepth.Max deep is an entry,
// one level more is a malformed line skipped with a warning, like
// encoding/json, and the lines around it are kept.
func TestNestingLimit(t *testing.T) {
	for _, tc := range []struct {
		depth int
		ok    bool
	}{{2, true}, {jsondepth.Max - 1, true}, {jsondepth.Max, true}, {jsondepth.Max + 1, false}, {3 * jsondepth.Max, false}} {
		line := deepEntry("deep", tc.depth)
		if json.Valid([]byte(line)) != tc.ok {
			t.Fatalf("depth %d: the test's line disagrees with encoding/json", tc.depth)
		}
		data := testHeader + "\n" + `{"type":"custom","id":"a","parentId":null,"customType":"x"}` + "\n" + line + "\n" +
			`{"type":"custom","id":"b","parentId":"a","customType":"x"}` + "\n"
		f, err := session.Parse([]byte(data))
		if err != nil {
			t.Fatalf("depth %d: %v", tc.depth, err)
		}
		if tc.ok {
			if len(f.Entries) != 3 || len(f.Warnings) != 0 {
				t.Errorf("depth %d: %d entries, warnings %v; want 3 entries", tc.depth, len(f.Entries), f.Warnings)
			}
			continue
		}
		if len(f.Entries) != 2 || len(f.Warnings) != 1 || f.Warnings[0].Line != 3 ||
			!strings.Contains(f.Warnings[0].Reason, "nested deeper than 10000 levels") {
			t.Errorf("depth %d: %d entries, warnings %v; want 2 entries and a nesting warning on line 3", tc.depth, len(f.Entries), f.Warnings)
		}
		if string(f.Skipped[3]) != line {
			t.Errorf("depth %d: the skipped line was not kept for rewrites", tc.depth)
		}
	}
}

// TestNestingHostile: 30 million open brackets, as the first line and as a
// later one, give an error and a warning, not a stack overflow.
func TestNestingHostile(t *testing.T) {
	deep := strings.Repeat("[", 30_000_000)
	_, err := session.Parse([]byte(deep + "\n"))
	if !errors.Is(err, session.ErrNotSession) || !strings.Contains(err.Error(), "nested deeper than") {
		t.Errorf("deep header: %v", err)
	}
	f, err := session.Parse([]byte(testHeader + "\n" + deep + "\n" + `{"type":"custom","id":"a","parentId":null}` + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Entries) != 1 || len(f.Warnings) != 1 {
		t.Errorf("deep line: %d entries, warnings %v", len(f.Entries), f.Warnings)
	}
	if _, err := session.ParseEntry([]byte(`{"type":"custom","data":` + deep)); err == nil {
		t.Error("ParseEntry accepted a line nested 30 million deep")
	}
	if err := session.ValidJSON([]byte(deep)); err == nil {
		t.Error("ValidJSON accepted 30 million levels")
	}
}

func TestValidJSON(t *testing.T) {
	for raw, ok := range map[string]bool{
		`{}`: true, ` [1, "a", {"b": null}] `: true, `"x"`: true, `1e5`: true,
		``: false, `{`: false, `[1,]`: false, `{} {}`: false, `01`: false, `"\x"`: false,
		strings.Repeat("[", jsondepth.Max) + strings.Repeat("]", jsondepth.Max):                 true,
		strings.Repeat("[", jsondepth.Max+1) + strings.Repeat("]", jsondepth.Max+1):             false,
		`{"a":` + strings.Repeat("[", jsondepth.Max) + strings.Repeat("]", jsondepth.Max) + `}`: false,
	} {
		if err := session.ValidJSON([]byte(raw)); (err == nil) != ok {
			t.Errorf("ValidJSON(%.40q) = %v, want ok=%v", raw, err, ok)
		}
	}
}
