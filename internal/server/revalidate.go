package server

import (
	"context"
	"fmt"
)

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
// configuration in force: the credentials it presented, and a name of
// the session o within its token's prefix.
func (s *Server) mayStill(ctx context.Context, o *openSession) error {
	c, err := s.authenticate(ctx)
	if err != nil {
		return err
	}
	if !o.reachableBy(c) {
		return fmt.Errorf("%w: session %q (token %q may touch %q only)", ErrForbidden, o.id, c.name, c.prefix)
	}
	return nil
}
