// Package admission bounds what the daemon, the viewer and the plugins'
// host API hold at once for whoever asks: calls in flight, bytes held in
// answers, streams, connections. Each is a hold taken before the work
// and given back after it, within caps per listener (the whole) and per
// caller or remote address (a key's share):
//
//   - Counter counts holds in all and per key within Caps, read at each
//     hold so a reload applies at once. The daemon's per-caller calls,
//     streams and open sessions (server.maxCallsInFlight,
//     server.maxStreams, server.maxOpenSessionsPerCaller), the viewer's
//     live update streams per address and in all, and the connections of
//     each listener are Counters.
//   - Listen wraps every listener of the product: a connection past its
//     caps (server.maxConnections, server.maxConnectionsPerAddress; by
//     default derived from the descriptor limit, DefaultCaps) is closed
//     at once — at the listener's cap the oldest connection that has sent
//     nothing is closed instead — and accept errors of a full descriptor
//     table are backed off from. A handshake timeout
//     (server.handshakeTimeout: a connection that does not complete its
//     TLS handshake and its protocol's preface in time is dropped, for it
//     holds its descriptor and its place under the cap) is each server's
//     own knob (gRPC's ConnectionTimeout, net/http's ReadHeaderTimeout):
//     the listener does not know when a handshake ends.
//   - Bytes is a byte budget: what a party holds of answers not yet read
//     (the host API's per connection). How the bytes are counted — a
//     gRPC codec encoding into buffers that count themselves back — is
//     the server's mechanism; the budget is here.
//
// A refusal is immediate, never a wait (a queue would hold the very
// memory a bound is there to cap), and is a *Refusal naming its bound:
// ErrCallerLimit, ErrAddressLimit or ErrCapacity.
//
// One rule answers them: whose share is used up decides the answer. The
// requester's own share (ErrCallerLimit: a caller by its credentials, a
// plugin's connection) is for the requester to ease: HTTP 429 Too Many
// Requests, gRPC ResourceExhausted (Unavailable with a retry delay for a
// caller's calls in flight, which pass by themselves as its calls
// answer). A capacity shared with others (ErrAddressLimit: one address
// may be many callers behind a NAT or a proxy; ErrCapacity: the whole)
// is no doing of the requester's: HTTP 503 Service Unavailable with a
// Retry-After; at a listener, the connection closed. A refusal that
// passes without the requester doing anything (its calls in flight, a
// shared capacity) says when to try again.
//
// Not here, because they are no refusal: the viewer's sign-ins
// (internal/signin) and its open sessions make room by ending the least
// recently used, and the host API's connections per plugin wait in the
// listener's backlog (a plugin is a child process of the host, whose
// second connection only ever replaces a failed first).
//
// Without these bounds anyone who could connect — before any credential
// is asked — could open idle connections until the daemon ran out of
// file descriptors, and any caller could open streams or run calls until
// the daemon ran out of memory or every other tenant was starved.
package admission
