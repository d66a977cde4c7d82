// Package connlimit is the one bound on what a listener of Pith holds at
// once: every listener of the product (pith serve's gRPC listener on TCP
// or a unix socket, its /metrics and viewer listeners, pith view's) is
// wrapped by Listen, which counts the live connections per listener and
// per remote address, closes at once a connection past either cap (at
// the listener's cap, the oldest one that has sent nothing instead), and
// backs off on the accept errors a full descriptor table gives (EMFILE)
// instead of spinning on them. The same Counter bounds the viewer's
// event streams.
//
// Without it anyone who could connect — before any credential is asked —
// could open idle connections until the daemon ran out of file
// descriptors: then no connection, an authenticated one included, was
// accepted any more. The caps' defaults derive from the descriptor limit
// (DefaultCaps), so connections alone never reach it.
//
// A handshake timeout (a connection that does not complete its TLS
// handshake and its protocol's preface in time is dropped) is each
// server's own knob (gRPC's ConnectionTimeout, net/http's
// ReadHeaderTimeout); the listener does not know when a handshake ends.
package connlimit
