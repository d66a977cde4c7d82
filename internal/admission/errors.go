package admission

import (
	"errors"
	"fmt"
	"net/http"
)

// The bounds a refusal can be at, matched with errors.Is. Which one it is
// decides how it is answered (the package doc's rule): the requester's
// own share, or a capacity it shares with others.
var (
	// ErrCallerLimit: the requester — a caller told apart by its
	// credentials, a plugin's connection to the host API — holds its own
	// share already; it is served once it gives one of its holds back.
	ErrCallerLimit = errors.New("the caller's own limit is reached")
	// ErrAddressLimit: the requester's remote address holds its share
	// already. Many callers may share one address (a NAT, a proxy), so
	// the requester itself may hold nothing.
	ErrAddressLimit = errors.New("too many from this address")
	// ErrCapacity: the bound of the whole (a listener's connections, the
	// viewer's streams) is reached, whoever holds it.
	ErrCapacity = errors.New("at capacity")
)

// Refusal is a hold refused at a bound. Its text is Reason's when set
// (the words of the bound's owner: its configuration key, what to do),
// else the bound's with the count; errors.Is matches Bound and Reason's
// own chain.
type Refusal struct {
	// Bound is ErrCallerLimit, ErrAddressLimit or ErrCapacity.
	Bound error
	// Held is what was held at the refusal, Cap the bound.
	Held, Cap int
	// Reason, when set, is the refusal as its owner explains it.
	Reason error
}

func (r *Refusal) Error() string {
	if r.Reason != nil {
		return r.Reason.Error()
	}
	return fmt.Sprintf("%v (%d held, the cap)", r.Bound, r.Held)
}

func (r *Refusal) Unwrap() []error {
	if r.Reason != nil {
		return []error{r.Bound, r.Reason}
	}
	return []error{r.Bound}
}

// Explained is r with reason as its text.
func (r *Refusal) Explained(reason error) *Refusal {
	e := *r
	e.Reason = reason
	return &e
}

// HTTPStatus is the status a web server (the viewer) answers a refusal
// with, by the package doc's rule: 429 Too Many Requests for the
// caller's own limit, 503 Service Unavailable for a shared capacity (an
// address's share, the whole's).
func HTTPStatus(err error) int {
	if errors.Is(err, ErrCallerLimit) {
		return http.StatusTooManyRequests
	}
	return http.StatusServiceUnavailable
}
