package viewer

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/pith-dev/pith/internal/admission"
)

// StreamCaps bound the live update streams (api/events) a viewer holds
// open at once: each holds a connection for as long as its page is
// open, and without a bound of their own streams could take every
// connection the listener allows, so that no page loaded any more (pith
// view took 19 990 of them, then its descriptors ran out). Set them
// below the listener's connection caps. A stream past one is refused
// with 503 and a Retry-After — a capacity shared with others, by the
// rule of internal/admission — and the page tries again later.
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

// streamGate counts the open streams within their caps.
type streamGate struct {
	caps  admission.Caps
	count admission.Counter[string]
}

func (c StreamCaps) gate() *streamGate {
	if c.Max <= 0 {
		return nil
	}
	g := &streamGate{caps: admission.Caps{Total: c.Max, PerKey: min(max(c.PerAddress, 0), c.Max)}}
	g.count.Keys = admission.Addresses
	return g
}

// takeStream takes a stream's place for r, or answers the refusal and
// returns false. release gives the place back.
func takeStream(gate *streamGate, w http.ResponseWriter, r *http.Request) (release func(), ok bool) {
	if gate == nil {
		return func() {}, true
	}
	key := admission.RemoteKey(r.RemoteAddr)
	release, err := gate.count.Take(key, admission.AddressCaps(key, gate.caps))
	if err != nil {
		what := fmt.Sprintf("%d live update streams are open, the viewer's cap", gate.caps.Total)
		if errors.Is(err, admission.ErrAddressLimit) {
			what = fmt.Sprintf("%d live update streams are open from this address, the viewer's cap", gate.caps.PerKey)
		}
		w.Header().Set("Retry-After", fmt.Sprint(streamRetry))
		httpError(w, admission.HTTPStatus(err), "%s; try again later", what)
		return nil, false
	}
	return release, true
}
