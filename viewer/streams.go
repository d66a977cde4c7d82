package viewer

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/pith-dev/pith/internal/connlimit"
)

// StreamCaps bound the live update streams (api/events) a viewer holds
// open at once: each holds a connection for as long as its page is
// open, and without a bound of their own streams could take every
// connection the listener allows, so that no page loaded any more (pith
// view took 19 990 of them, then its descriptors ran out). Set them
// below the listener's connection caps. A stream past one is refused
// with 503 and a Retry-After; the page tries again later.
type StreamCaps struct {
	// Max bounds the streams in all (all the sessions of a Sessions);
	// 0: no bound of the viewer's own.
	Max int
	// PerAddress bounds one remote address's (an IPv4 address, an IPv6
	// /64, as the listener counts its connections); 0: none.
	PerAddress int
}

// streamRetry is the Retry-After of a refused stream, in seconds.
const streamRetry = 5

func (c StreamCaps) gate() *connlimit.Counter {
	if c.Max <= 0 {
		return nil
	}
	return connlimit.NewCounter(connlimit.Caps{Total: c.Max, PerAddress: min(max(c.PerAddress, 0), c.Max)})
}

// takeStream takes a stream's place for r, or answers the refusal and
// returns false. release gives the place back.
func takeStream(gate *connlimit.Counter, w http.ResponseWriter, r *http.Request) (release func(), ok bool) {
	if gate == nil {
		return func() {}, true
	}
	release, err := gate.Take(connlimit.RemoteKey(r.RemoteAddr))
	if err != nil {
		what := fmt.Sprintf("%d live update streams are open, the viewer's cap", gate.Caps().Total)
		if errors.Is(err, connlimit.ErrPerAddress) {
			what = fmt.Sprintf("%d live update streams are open from this address, the viewer's cap", gate.Caps().PerAddress)
		}
		w.Header().Set("Retry-After", fmt.Sprint(streamRetry))
		httpError(w, http.StatusServiceUnavailable, "%s; try again later", what)
		return nil, false
	}
	return release, true
}
