package pluginhost

import "testing"

// TestRelayLimitAdmits: within one second's allowance lines are admitted
// until the lines or the bytes run out; a line refused for its bytes does
// not use up a line; every refusal is counted, and pending reports the
// count once.
func TestRelayLimitAdmits(t *testing.T) {
	r := newRelayLimit(3, 100)
	for i := range 3 {
		if ok, _, _ := r.admit(10); !ok {
			t.Fatalf("line %d of 3 refused", i+1)
		}
	}
	if ok, _, _ := r.admit(10); ok {
		t.Fatal("a fourth line within the second was admitted")
	}

	r = newRelayLimit(5, 25)
	if ok, _, _ := r.admit(20); !ok {
		t.Fatal("20 of 25 bytes refused")
	}
	if ok, _, _ := r.admit(10); ok {
		t.Fatal("a line over the bytes left was admitted")
	}
	for i := range 4 { // the refused line spent no line: 4 of 5 are left
		if ok, _, _ := r.admit(1); !ok {
			t.Fatalf("small line %d of 4 refused", i+1)
		}
	}
	if ok, _, _ := r.admit(1); ok {
		t.Fatal("a sixth line was admitted")
	}
	r.droppedTail(7)
	if lines, bytes := r.pending(); lines != 2 || bytes != 10+1+7 {
		t.Fatalf("pending = %d lines, %d bytes; want 2, 18", lines, bytes)
	}
	if lines, bytes := r.pending(); lines != 0 || bytes != 0 {
		t.Fatalf("pending again = %d, %d; want nothing", lines, bytes)
	}
	if got := r.totalDroppedLines.Load(); got != 2 {
		t.Errorf("total dropped lines %d, want 2", got)
	}

	var none *relayLimit // no limit: everything passes
	if ok, _, _ := none.admit(1 << 20); !ok {
		t.Error("a nil limit refused a line")
	}
}
