package server

import "testing"

// TestStoredReadCountsEachLineOnce: the bytes a viewer holds of a stored
// session, as it reads it whole, then from its last line on, with a torn
// line finished later and a reading that finds nothing new.
func TestStoredReadCountsEachLineOnce(t *testing.T) {
	var r storedRead
	steps := []struct {
		after int
		data  string
		total int
	}{
		{0, "aaaa\nbb\n", 8},
		{1, "bb\n", 8},           // nothing new: the last line again
		{1, "bb\ncc\ndd", 13},    // an append and a torn line
		{2, "cc\ndd\n", 14},      // the torn line finished
		{3, "dd\nee\n", 17},      // one more
		{0, "x\nw\n", 4},         // read whole again
		{1, "w\n" + "yyyy", 8},   // torn
		{1, "w\n" + "yyyy", 8},   // still torn: not counted twice
		{1, "w\n" + "yyyy\n", 9}, // finished
	}
	for i, s := range steps {
		next, total := r.add(s.after, []byte(s.data))
		if total != s.total {
			t.Fatalf("step %d: %d bytes held, want %d", i, total, s.total)
		}
		r = next
	}
}
