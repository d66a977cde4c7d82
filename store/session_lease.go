package store

import (
	"context"
	"errors"
	"sync"
	"time"
)

// HoldLease takes the session's lease for this host, reads what other
// hosts appended, and renews the lease every third of its TTL until
// release. Nested holds share the lease.
func (s *Session) HoldLease(ctx context.Context) (func(), error) {
	s.mu.Lock()
	if s.held > 0 {
		s.held++
		s.mu.Unlock()
		return s.releaseOnce(nil), nil
	}
	s.mu.Unlock()
	if s.opts.Holder == "" {
		return nil, errors.New("store session: no lease holder configured")
	}
	l, err := s.st.AcquireLease(ctx, s.name, s.opts.Holder, s.opts.LeaseTTL)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.lease, s.held = &l, 1
	// What is done under the lease starts from the session as it is now.
	err = s.catchUp(ctx)
	if err != nil {
		s.lease, s.held = nil, 0
	}
	s.mu.Unlock()
	if err != nil {
		s.st.ReleaseLease(context.WithoutCancel(ctx), l)
		return nil, err
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go s.renew(l, stop, done)
	return s.releaseOnce(func() {
		close(stop)
		<-done
		s.mu.Lock()
		cur := *s.lease
		s.lease = nil
		s.mu.Unlock()
		ctx, cancel := s.ctx()
		defer cancel()
		if err := s.st.ReleaseLease(ctx, cur); err != nil {
			s.log.Debug("releasing the lease failed; it expires by itself", "session", s.name, "error", err)
		}
	}), nil
}

// releaseOnce is the release function of one HoldLease: last, when not
// nil, runs when the outermost hold is released.
func (s *Session) releaseOnce(last func()) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			s.held--
			s.mu.Unlock()
			if last != nil {
				last()
			}
		})
	}
}

// renew keeps the lease alive. A lost lease is only logged: the writes
// made under it fail with ErrLeaseLost in the store, which is what stops
// the work.
func (s *Session) renew(l Lease, stop, done chan struct{}) {
	defer close(done)
	t := time.NewTicker(s.opts.LeaseTTL / 3)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		ctx, cancel := s.ctx()
		nl, err := s.st.AcquireLease(ctx, s.name, l.Holder, s.opts.LeaseTTL)
		cancel()
		if err != nil {
			s.log.Warn("renewing the session's lease failed", "session", s.name, "error", err)
			continue
		}
		s.mu.Lock()
		if s.lease != nil {
			s.lease.Expires = nl.Expires
		}
		s.mu.Unlock()
	}
}
