package hooks

import (
	"encoding/json"
	"strings"
	"testing"
)

func entriesOf(sizes ...int) []json.RawMessage {
	out := make([]json.RawMessage, len(sizes))
	for i, n := range sizes {
		out[i] = json.RawMessage(strings.Repeat("x", n))
	}
	return out
}

func TestBoundEntries(t *testing.T) {
	tests := []struct {
		name      string
		sizes     []int
		since     int
		max       int
		wantSizes int // number of entries kept (always a suffix)
		truncated bool
	}{
		{"all fit", []int{10, 10, 10}, 1, 30, 3, false},
		{"from the last compaction", []int{10, 10, 10, 10}, 3, 25, 1, true},
		{"newest that fit when the tail does not", []int{10, 10, 10, 10}, 1, 25, 2, true},
		{"no compaction: newest that fit", []int{10, 10, 10}, 0, 15, 1, true},
		{"nothing fits", []int{10, 50}, 0, 20, 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := entriesOf(tc.sizes...)
			got, cut := boundEntries(in, tc.since, tc.max)
			if len(got) != tc.wantSizes || cut != tc.truncated {
				t.Fatalf("kept %d (truncated %v), want %d (%v)", len(got), cut, tc.wantSizes, tc.truncated)
			}
			for i := range got {
				if &got[i][0] != &in[len(in)-len(got)+i][0] {
					t.Fatal("not a suffix of the path")
				}
			}
		})
	}
}
