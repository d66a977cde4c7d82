package sdk

import (
	"context"
	"os"
	"strconv"
	"time"

	"github.com/pith-dev/pith/internal/wire"
)

// watchInterval is how often the watchdog looks for the host: well under
// the promise that a plugin outlives a SIGKILLed host by at most 2 s.
const watchInterval = 200 * time.Millisecond

// watchParent calls gone once the host process is no longer there: the
// parent pid changed (the orphan was re-parented) or the pid the host
// passed in the environment is gone. Nothing else would stop a plugin whose
// host was SIGKILLed: no signal reaches it and nobody reads its pipes.
func watchParent(ctx context.Context, gone func()) {
	ppid := os.Getppid()
	hostPID, _ := strconv.Atoi(os.Getenv(wire.EnvHostPID))
	t := time.NewTicker(watchInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if os.Getppid() != ppid || (hostPID > 0 && !alive(hostPID)) {
				gone()
				return
			}
		}
	}
}
