// Package client is a small Go client of `pith serve`'s SessionService for
// agents: open a session, append messages, read the context, report turns
// and errors, compact, navigate, watch events and close it. Messages and
// entries are their JSON bytes; the gRPC types stay inside this package, and
// failures come back as errors that match the sentinels below with
// errors.Is.
//
// A daemon on loopback or a unix socket is dialled as is; one on another
// machine speaks TLS (WithTLS, WithTLSFiles, with a client certificate for
// mutual TLS) and usually wants a bearer token (WithToken). A token is
// never sent in clear text to anything but loopback or a unix socket.
package client
