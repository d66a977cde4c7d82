// Package client is a small Go client of `pith serve`'s SessionService for
// agents: open a session, append messages, read the context, report turns
// and errors, compact, navigate and watch events. Messages and entries are
// their JSON bytes; the gRPC types stay inside this package, and failures
// come back as errors that match the sentinels below with errors.Is.
package client
