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
// One rule answers them: whose share is used up decides the answer,
// whatever is counted. The requester's own share (ErrCallerLimit: a
// caller by its credentials — its calls in flight, its streams, its open
// sessions — or a plugin's connection, its unread answers) is for the
// requester to ease: HTTP 429 Too Many Requests; gRPC ResourceExhausted,
// or Unavailable with a retry delay for calls in flight, which pass by
// themselves as the caller's calls answer. A capacity shared with others
// (ErrAddressLimit: one address may be many callers behind a NAT or a
// proxy; ErrCapacity: the whole — a listener's connections, the viewer's
// streams, its open sessions and their byte budget) is no doing of the
// requester's: HTTP 503 Service Unavailable; at a listener, the
// connection closed. HTTPStatus is the rule for web servers. A
// Retry-After is the refusal owner's to give where it knows a fair delay
// (calls in flight: 1 s; the viewer's streams and byte budget: 5 s).
//
// The viewer answered a stream refused for its caller 429 and one
// refused for its address or in all 503: both stand under the rule, the
// one because it is the caller's own doing, the other because it is not.
//
// Not here, because they are no refusal: the viewer's sign-ins
// (internal/signin: at most 4096, 64 per token) make room by ending the
// least recently used, and the host API's connections per plugin wait
// in the listener's backlog (a plugin is a child process of the host,
// whose second connection only ever replaces a failed first). The open
// sessions, the daemon's and the viewer's, make room the same way first
// and refuse, under the rule, only when every one is in use.
//
// Without these bounds anyone who could connect — before any credential
// is asked — could open idle connections until the daemon ran out of
// file descriptors, and any caller could open streams or run calls until
// the daemon ran out of memory or every other tenant was starved.
package admission
