package server

import (
	"context"
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

// revalidate returns ctx, cancelled with recheck's error as its cause as
// soon as a configuration applied later no longer lets the caller hold
// the stream: a token revoked, or its prefix narrowed away from the
// session. Credentials are checked per call, and a stream is one call
// that lasts; without this a revoked token's open streams went on
// delivering for as long as its client kept them. stop ends the watch.
func (s *Server) revalidate(ctx context.Context, recheck func() error) (_ context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	go func() {
		for {
			// Taken before the check, so a configuration applied while
			// it runs is checked again.
			next := *s.applied.Load()
			if err := recheck(); err != nil {
				cancel(err)
				return
			}
			select {
			case <-next:
			case <-ctx.Done():
				return
			case <-s.shutdown:
				return
			}
		}
	}()
	return ctx, func() { cancel(nil) }
}

// mayStill is the check of a gRPC stream's caller against the
// configuration in force: the credentials it presented, and the
// session's name rel within its token's prefix.
func (s *Server) mayStill(ctx context.Context, rel string) error {
	c, err := s.authenticate(ctx)
	if err != nil {
		return err
	}
	if !c.may(rel) {
		return fmt.Errorf("%w: %q (token %q may touch %q only)", ErrForbidden, rel, c.name, c.prefix)
	}
	return nil
}
