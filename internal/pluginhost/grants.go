package pluginhost

import "github.com/pith-dev/pith/internal/wire"

// grants are the host-API capabilities of one supervisor's calls in
// flight (see wire.Grants).
type grants = wire.Grants
