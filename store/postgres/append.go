package postgres

import (
	"context"
	"crypto/rand"
	"errors"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/store"
)

// Append adds drafts in one statement that checks the last entry.
func (s *Store) Append(ctx context.Context, name, expectLast string, drafts ...session.Draft) ([]*session.Entry, error) {
	return s.append(ctx, name, nil, expectLast, drafts)
}

// AppendLeased is Append whose statement also checks the lease.
func (s *Store) AppendLeased(ctx context.Context, lease store.Lease, expectLast string, drafts ...session.Draft) ([]*session.Entry, error) {
	return s.append(ctx, lease.Session, &lease, expectLast, drafts)
}

// What pith_append (migration 00007) returns instead of a line number.
const (
	appendNotFound  = -1
	appendLeaseLost = -2
	appendOldFormat = -3
	appendConflict  = -4
	appendIDTaken   = -5
)

// appendCall is the whole append: one statement, so one round trip and
// one implicit transaction, all or nothing.
const appendCall = `SELECT pith_append($1, $2, $3, $4, $5, $6, $7)`

func (s *Store) append(ctx context.Context, name string, lease *store.Lease, expectLast string, drafts []session.Draft) ([]*session.Entry, error) {
	if err := store.CheckName(name); err != nil {
		return nil, err
	}
	if len(drafts) == 0 {
		return nil, nil
	}
	var holder *string
	if lease != nil {
		holder = &lease.Holder
	}
	for {
		lines, err := s.draftLines(name, expectLast, drafts)
		if err != nil {
			// The checks come first, as they did in the transaction: a
			// refusal of the write wins over a draft it would not take.
			if _, cerr := s.callAppend(ctx, name, holder, expectLast, &draftedLines{}); cerr != nil {
				return nil, cerr
			}
			return nil, err
		}
		base, err := s.callAppend(ctx, name, holder, expectLast, lines)
		if errors.Is(err, errIDTaken) {
			continue // drawn again: a new id is used in the session
		}
		if err != nil {
			return nil, err
		}
		for i, e := range lines.entries {
			e.Line = int(base) + i + 1
		}
		s.waker.wake()
		return lines.entries, nil
	}
}

// errIDTaken: one of the drawn ids is in the session already.
var errIDTaken = own("an entry id is taken")

// callAppend runs pith_append and turns its refusals into the store's
// errors; it returns the line number the new lines follow.
func (s *Store) callAppend(ctx context.Context, name string, holder *string, expectLast string, l *draftedLines) (int64, error) {
	var base int64
	err := s.pool.QueryRow(ctx, appendCall, name, holder, []byte(expectLast),
		nonNilRows(l.ids), nonNilRows(l.parents), nonNilRows(l.types), nonNilRows(l.raws)).Scan(&base)
	if err != nil {
		return 0, classify(err)
	}
	switch base {
	case appendNotFound:
		return 0, own("%s: %w", name, store.ErrNotFound)
	case appendLeaseLost:
		return 0, own("%s: %w", name, store.ErrLeaseLost)
	case appendOldFormat:
		// Its ids exist only in memory; an entry pointing at them would
		// dangle for pi.
		return 0, own("%s: %w; export it, run `pith migrate --in-place` on the file and import that", name, session.ErrOldVersion)
	case appendConflict:
		return 0, own("%s: %w", name, store.ErrConflict)
	case appendIDTaken:
		return 0, errIDTaken
	}
	return base, nil
}

// draftedLines is an append's lines, as pith_append takes them, and its
// entries.
type draftedLines struct {
	ids, parents, types, raws [][]byte
	entries                   []*session.Entry
}

// draftLines builds the drafts' lines as a chain under the first's
// parent (else expectLast), with fresh ids distinct among themselves;
// pith_append checks them against the session.
func (s *Store) draftLines(name, expectLast string, drafts []session.Draft) (*draftedLines, error) {
	pid := expectLast
	if drafts[0].Parent != nil {
		pid = *drafts[0].Parent
	}
	l := &draftedLines{}
	taken := make(map[string]bool, len(drafts))
	at := s.now()
	for _, d := range drafts {
		id, err := freshID(taken)
		if err != nil {
			return nil, err
		}
		line, err := session.BuildLine(d, id, pid, at)
		if err != nil {
			return nil, own("%s: append %s entry: %w", name, d.Type, err)
		}
		e, err := session.ParseEntry(line)
		if err != nil {
			return nil, own("%s: append %s entry: %w", name, d.Type, err)
		}
		l.ids = append(l.ids, []byte(id))
		l.parents = append(l.parents, []byte(pid))
		l.types = append(l.types, []byte(d.Type))
		l.raws = append(l.raws, append(line, '\n'))
		l.entries = append(l.entries, e)
		pid = id
	}
	return l, nil
}

// freshID draws an id not in taken and adds it.
func freshID(taken map[string]bool) (string, error) {
	for {
		id, err := session.NewEntryID(rand.Reader)
		if err != nil {
			return "", err
		}
		if !taken[id] {
			taken[id] = true
			return id, nil
		}
	}
}

// nonNilRows sends an empty array, not NULL, for no rows.
func nonNilRows(b [][]byte) [][]byte {
	if b == nil {
		return [][]byte{}
	}
	return b
}
