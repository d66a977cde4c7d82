package served

import "fmt"

// The one check of server.maxSessionBytes. The daemon bounds every
// session's bytes it takes in, however they come: an open, a call on a
// session held already (the bound may have been lowered since), a
// catch-up with what another writer (pi, a pith command, another host)
// appended, a whole read after a rewrite, a Load, and the daemon's own
// appends. All of them refuse through OverBound, so a refusal reads the
// same whatever found it and ResourceExhausted (ErrLimit) answers it.

// SessionBound is server.maxSessionBytes as it is now: asked at every
// check, as a reload may lower or raise it.
type SessionBound func() int64

// OverBound refuses size bytes over limit (limit <= 0: no bound); what
// says which bytes ("session \"a.jsonl\" is", "the session would grow
// to").
func OverBound(what string, size, limit int64) error {
	if limit <= 0 || size <= limit {
		return nil
	}
	return fmt.Errorf("%w: %s %d bytes, over server.maxSessionBytes (%d)", ErrLimit, what, size, limit)
}

// Admit is OverBound with the bound in force; a nil SessionBound admits
// every size.
func (b SessionBound) Admit(what string, size int64) error {
	if b == nil {
		return nil
	}
	return OverBound(what, size, b())
}
