package postgres

import (
	"testing"
	"time"
)

// TestEventsDeliveredForgetsOldIDs: the memory of delivered events is
// bounded by the rows still believed, and keeps every id younger than
// the cutoff, even one delivered behind a younger one.
func TestEventsDeliveredForgetsOldIDs(t *testing.T) {
	var d eventsDelivered
	t0 := time.Unix(1_000_000, 0)
	for i := range 1000 {
		at := t0.Add(time.Duration(i) * time.Second)
		d.add(int64(i+1), at, at.Add(-10*time.Minute))
	}
	if len(d.ids) != 601 || len(d.order) != 601 {
		t.Fatalf("kept %d ids (%d in order), want the 601 of the last 10 minutes", len(d.ids), len(d.order))
	}
	if d.has(399) || !d.has(400) || !d.has(1000) {
		t.Fatal("the memory forgot a believed id or kept an old one")
	}
	// Out of order: id 2000 written before id 1999, delivered after.
	late := t0.Add(2000 * time.Second)
	d.add(1999, late, late.Add(-10*time.Minute))
	d.add(2000, late.Add(-time.Second), late.Add(-10*time.Minute))
	if !d.has(1999) || !d.has(2000) {
		t.Fatal("an id delivered out of order was forgotten while believed")
	}
}
