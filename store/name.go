package store

import "github.com/pith-dev/pith/store/sessionname"

// ErrInvalidName refuses a session name outside the grammar of CheckName.
var ErrInvalidName = sessionname.ErrInvalid

// MaxNameDepth is how many path segments a session name may have.
const MaxNameDepth = sessionname.MaxDepth

// CheckName enforces the session name grammar, the same for every store
// (sessionname.Check).
func CheckName(rel string) error { return sessionname.Check(rel) }
