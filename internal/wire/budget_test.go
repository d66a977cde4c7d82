package wire

import (
	"testing"

	"github.com/pith-dev/pith/internal/dispatch"
)

// TestEventBudgetFitsTheWire: the bounded fields of an event may take
// dispatch.MaxEventBytes; the rest of the message (file lists, summary,
// instructions) must still have room under MaxMessageSize.
func TestEventBudgetFitsTheWire(t *testing.T) {
	if room := MaxMessageSize - dispatch.MaxEventBytes; room < 32<<20 {
		t.Fatalf("only %d bytes left for the unbounded fields", room)
	}
}
