package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/pith-dev/pith/core/session"
)

// Update runs change on the session read afresh under the lease and
// rewrites it with the result and the sidecar changes in one step of the
// store; when another host appended meanwhile, it reads again and runs
// change again. ErrLeaseHeld when another host holds the lease.
func (s *Session) Update(change func(tx *session.Tx) (*session.File, error)) error {
	ctx, cancel := s.ctx()
	defer cancel()
	release, err := s.HoldLease(ctx)
	if err != nil {
		return err
	}
	defer release()
	s.mu.Lock()
	defer s.mu.Unlock()
	for range maxAttempts {
		// Read afresh: a rewrite by another host keeps the last entry,
		// and the change must start from the stored bytes.
		if err := s.reload(ctx); err != nil {
			return err
		}
		side := &pendingSidecars{ctx: ctx, st: s.st, name: s.name}
		f, err := change(session.NewTx(s.file, s.tree, s.leaf, s.name, side))
		if err != nil || f == nil {
			return err
		}
		var buf bytes.Buffer
		if err := f.Encode(&buf); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		err = s.st.Rewrite(ctx, *s.lease, LastID(s.file), buf.Bytes(), side.changes...)
		if errors.Is(err, ErrConflict) {
			continue
		}
		if err != nil {
			return err
		}
		return s.reload(ctx)
	}
	return fmt.Errorf("%s: %w (gave up after %d attempts)", s.name, ErrConflict, maxAttempts)
}

// pendingSidecars is the sidecars of an Update: reads come from the
// store, changes are collected for the Rewrite that commits them.
type pendingSidecars struct {
	ctx     context.Context
	st      Store
	name    string
	changes []SidecarChange
}

func (p *pendingSidecars) change(suffix string) *SidecarChange {
	for i := range p.changes {
		if p.changes[i].Suffix == suffix {
			return &p.changes[i]
		}
	}
	p.changes = append(p.changes, SidecarChange{Suffix: suffix, Keep: -1})
	return &p.changes[len(p.changes)-1]
}

func (p *pendingSidecars) Read(suffix string) ([]byte, error) {
	return p.st.ReadSidecar(p.ctx, p.name, suffix)
}

func (p *pendingSidecars) Truncate(suffix string, size int64) error {
	c := p.change(suffix)
	if len(c.Append) > 0 {
		return errors.New("a sidecar is cut before it is appended to")
	}
	c.Keep = size
	return nil
}

func (p *pendingSidecars) Append(suffix string, data []byte) error {
	c := p.change(suffix)
	c.Append = append(c.Append, data...)
	return nil
}
