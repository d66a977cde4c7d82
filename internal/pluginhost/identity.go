package pluginhost

import (
	"sync"

	"github.com/pith-dev/pith/internal/plugintls"
)

// hostIdentity is the certificate and key the host presents to its
// plugins, made once per process: making one costs a P-256 key and a
// signature (~0.3 ms of CPU), paid by every plugin start when each got its
// own. Sharing it gives a plugin nothing it did not have: each receives
// only the certificate, the key never leaves the host's memory, and each
// plugin's connection still trusts exactly that plugin's own certificate
// (pinned from its handshake line).
var hostIdentity = sync.OnceValues(plugintls.New)
