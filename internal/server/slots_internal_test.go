package server

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/pith-dev/pith/internal/admission"
)

// held is how many slots of kind the caller name holds now (tests).
func (s *Server) held(name string, kind slotKind) int {
	_, n := s.slots.Held(slotKey{name, kind})
	return n
}

// TestSlotRefusalNamesItsBound: a caller's slot refused reads as the
// daemon's limit it always did (ErrBusy for calls in flight, ErrLimit for
// streams) and is admission's caller limit, which the viewer answers 429.
func TestSlotRefusalNamesItsBound(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.Server.MaxCallsInFlight, cfg.Server.MaxStreams = 1, 1
	s := startServer(t, cfg).srv
	for kind, want := range map[slotKind]error{slotCall: ErrBusy, slotStream: ErrLimit} {
		key := slotKey{"tester", kind}
		if err := s.takeSlot(key); err != nil {
			t.Fatal(err)
		}
		err := s.takeSlot(key)
		if !errors.Is(err, want) || !errors.Is(err, admission.ErrCallerLimit) || !strings.Contains(err.Error(), "this caller has 1 ") {
			t.Errorf("kind %d past its bound: %v; want %v, admission's caller limit, and the count", kind, err, want)
		}
		if got := admission.HTTPStatus(err); got != http.StatusTooManyRequests {
			t.Errorf("kind %d past its bound: HTTP %d, want 429", kind, got)
		}
		s.giveSlot(key)
		if n := s.held("tester", kind); n != 0 {
			t.Errorf("kind %d: %d held after its release, want 0", kind, n)
		}
	}
}
