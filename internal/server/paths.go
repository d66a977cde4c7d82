package server

import (
	"github.com/pith-dev/pith/store"
	"github.com/pith-dev/pith/store/served"
)

// Path errors, the session source's (store/served); the service maps
// ErrInvalidPath to InvalidArgument and ErrOutsideRoot to
// PermissionDenied.
var (
	ErrInvalidPath = served.ErrInvalidPath
	ErrOutsideRoot = served.ErrOutsideRoot
)

// checkName enforces the session name grammar; store.CheckName is the one
// place it lives, shared with every store and the CLI.
func checkName(rel string) error { return store.CheckName(rel) }
