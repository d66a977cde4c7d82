package server

import (
	"fmt"
	"sync"
)

// streamCounts is the one place the number of long-lived streams a caller
// holds open is bounded (server.maxStreams): every WatchEvents call and
// every live update stream of the viewer takes a slot here for its whole
// life. Without it any caller — one token scoped to a single directory
// included — could open streams until the daemon ran out of memory: each
// holds a goroutine, gRPC's or HTTP's stream state and an event buffer.
// Callers are counted by name (a token's, a client certificate's
// subject); anonymous callers share the one name "".
type streamCounts struct {
	mu sync.Mutex
	n  map[string]int
}

// openStream takes a stream slot for c, or refuses with ErrLimit when c
// holds server.maxStreams already (the configuration in force: a reload
// lowering it refuses new streams at once and ends none). release gives
// the slot back; call it once.
func (s *Server) openStream(c caller) (release func(), err error) {
	limit := s.cfg.Load().Server.MaxStreams
	sc := &s.streams
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.n == nil {
		sc.n = map[string]int{}
	}
	if sc.n[c.name] >= limit {
		return nil, fmt.Errorf("%w: this caller holds %d event streams open (server.maxStreams); close one first", ErrLimit, sc.n[c.name])
	}
	sc.n[c.name]++
	var once sync.Once
	return func() {
		once.Do(func() {
			sc.mu.Lock()
			defer sc.mu.Unlock()
			if sc.n[c.name]--; sc.n[c.name] <= 0 {
				delete(sc.n, c.name)
			}
		})
	}, nil
}
