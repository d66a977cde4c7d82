package admission

import "sync/atomic"

// Bytes is a byte budget: what one party holds now of bytes it was lent
// (answers encoded and not yet read by their client). What lends and
// returns them is the holder's own mechanism (a buffer pool counting
// what gRPC frees); Admit is the bound. The zero Bytes holds nothing; it
// is safe for concurrent use.
type Bytes struct{ held atomic.Int64 }

// Lend counts n bytes in.
func (b *Bytes) Lend(n int) { b.held.Add(int64(n)) }

// Return counts n bytes lent out again.
func (b *Bytes) Return(n int) { b.held.Add(-int64(n)) }

// Held is what is held now.
func (b *Bytes) Held() int64 { return b.held.Load() }

// Admit refuses more work while budget or more is held: the party's own
// limit (ErrCallerLimit), which passes as its client reads. What is
// admitted may take the holding past budget by one answer each: the
// bound is checked, not reserved, so that no answer's size has to be
// known before it is made.
func (b *Bytes) Admit(budget int64) error {
	if n := b.held.Load(); n >= budget {
		return &Refusal{Bound: ErrCallerLimit, Held: int(n), Cap: int(budget)}
	}
	return nil
}
