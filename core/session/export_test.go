package session

import "time"

// SetDrainWait lets a test wait for a replaced file's last writer without
// a bound, so that no result depends on the machine's speed.
func SetDrainWait(d time.Duration) (restore func()) {
	old := drainWait
	drainWait = d
	return func() { drainWait = old }
}
