package sdk

import "testing"

// ReturnWhenRunByHand makes Serve return ErrNotLaunchedByHost, instead of
// exiting, when run outside Pith, until t ends: an in-process test can
// watch it refuse.
func ReturnWhenRunByHand(t *testing.T) {
	old := exitRunByHand
	exitRunByHand = func() {}
	t.Cleanup(func() { exitRunByHand = old })
}
