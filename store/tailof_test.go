package store_test

import (
	"testing"

	"github.com/pith-dev/pith/store"
)

func TestTailOf(t *testing.T) {
	for _, c := range []struct {
		data  string
		after int
		tail  string
		n     int
	}{
		{"", 0, "", 0},
		{"a\n", 0, "a\n", 1},
		{"a\nb\n", 1, "b\n", 2},
		{"a\nb\n", 2, "", 2},
		{"a\nb\n", 5, "", 2},
		{"a\nb", 1, "b", 2},
		{"a\n\nc\n", 1, "\nc\n", 3},
	} {
		tail, n := store.TailOf([]byte(c.data), c.after)
		if string(tail) != c.tail || n != c.n {
			t.Errorf("TailOf(%q, %d) = %q, %d; want %q, %d", c.data, c.after, tail, n, c.tail, c.n)
		}
	}
}
