package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// HoldLease takes the session's lease for this host, reads what other
// hosts appended, and renews the lease every third of its TTL until every
// hold is released; the context it returns ends (cause ErrLeaseLost) when
// a renewal finds the lease taken over, or its TTL passed without one.
// Holds while the lease is held share it — nested ones, and concurrent
// ones of this host — each with a context that ends when the lease is
// lost; the lease is given back when the last of them is released,
// whatever the order.
func (s *Session) HoldLease(ctx context.Context) (context.Context, func(), error) {
	s.acquiring.Lock()
	defer s.acquiring.Unlock()
	s.mu.Lock()
	if s.held > 0 {
		lease := s.leaseCtx
		if lease.Err() != nil {
			// Lost, and not given back until its last hold is released:
			// nothing can be done under it.
			s.mu.Unlock()
			return nil, nil, context.Cause(lease)
		}
		s.held++
		s.mu.Unlock()
		held, release := s.hold(ctx, lease)
		return held, release, nil
	}
	s.mu.Unlock()
	if s.opts.Holder == "" {
		return nil, nil, errors.New("store session: no lease holder configured")
	}
	asked := time.Now()
	l, err := s.st.AcquireLease(ctx, s.name, s.opts.Holder, s.opts.LeaseTTL)
	if err != nil {
		return nil, nil, err
	}
	s.mu.Lock()
	s.lease = &l
	// What is done under the lease starts from the session as it is now.
	err = s.catchUp(ctx)
	if err != nil {
		s.lease = nil
	}
	s.mu.Unlock()
	if err != nil {
		s.st.ReleaseLease(context.WithoutCancel(ctx), l)
		return nil, nil, err
	}
	// The lease outlives the hold that took it when others share it: its
	// context ends only when it is lost or given back.
	lease, lost := context.WithCancelCause(context.WithoutCancel(ctx))
	stop := make(chan struct{})
	done := make(chan struct{})
	go s.renew(l, asked.Add(s.opts.LeaseTTL), lost, stop, done)
	s.mu.Lock()
	s.held, s.leaseCtx = 1, lease
	s.endLease = func() {
		close(stop)
		<-done
		lost(context.Canceled)
		s.mu.Lock()
		cur := *s.lease
		s.lease, s.leaseCtx = nil, nil
		s.mu.Unlock()
		ctx, cancel := s.ctx()
		defer cancel()
		if err := s.st.ReleaseLease(ctx, cur); err != nil {
			s.log.Debug("releasing the lease failed; it expires by itself", "session", s.name, "error", err)
		}
	}
	s.mu.Unlock()
	held, release := s.hold(ctx, lease)
	return held, release, nil
}

// hold is one hold of the held lease: a context that ends with ctx, when
// the lease is lost (with its cause) or when the hold is released, and
// the release, after which the last hold released gives the lease back.
func (s *Session) hold(ctx, lease context.Context) (context.Context, func()) {
	held, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(lease, func() { cancel(context.Cause(lease)) })
	var once sync.Once
	return held, func() {
		once.Do(func() {
			stop()
			cancel(context.Canceled)
			// Under acquiring: a hold taken meanwhile would otherwise
			// get a new lease this release then gives back.
			s.acquiring.Lock()
			defer s.acquiring.Unlock()
			s.mu.Lock()
			s.held--
			var end func()
			if s.held == 0 {
				end, s.endLease = s.endLease, nil
			}
			s.mu.Unlock()
			if end != nil {
				end()
			}
		})
	}
}

// renew keeps the lease alive until stop. deadline is when the lease ends
// by this host's clock (measured from before the call that got it, so
// never later than the store's). A renewal that fails for another reason
// (the store unreachable) is retried while the lease may still hold; once
// it is taken over or past its deadline the lease is lost for good:
// renewing then could take it back after another host used it, so
// renewal stops and lost is called.
func (s *Session) renew(l Lease, deadline time.Time, lost context.CancelCauseFunc, stop, done chan struct{}) {
	defer close(done)
	t := time.NewTicker(s.opts.LeaseTTL / 3)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		if time.Now().After(deadline) {
			s.leaseLost(lost, "it expired before it could be renewed")
			return
		}
		asked := time.Now()
		ctx, cancel := s.ctx()
		// RenewLease, not AcquireLease: a renewal that arrives after
		// another host took the lease and gave it back must not take it
		// again, since that host worked under it meanwhile.
		nl, err := s.st.RenewLease(ctx, l, s.opts.LeaseTTL)
		cancel()
		switch {
		case errors.Is(err, ErrLeaseLost), errors.Is(err, ErrNotFound):
			s.leaseLost(lost, "another host took it over, or it was released")
			return
		case err != nil:
			s.log.Warn("renewing the session's lease failed; retrying while it holds", "session", s.name, "error", err)
			continue
		}
		deadline = asked.Add(s.opts.LeaseTTL)
		s.mu.Lock()
		if s.lease != nil {
			s.lease.Expires = nl.Expires
		}
		s.mu.Unlock()
	}
}

func (s *Session) leaseLost(lost context.CancelCauseFunc, why string) {
	s.log.Warn("lost the session's lease; the work under it stops", "session", s.name, "reason", why)
	lost(fmt.Errorf("%s: %w (%s)", s.name, ErrLeaseLost, why))
}
