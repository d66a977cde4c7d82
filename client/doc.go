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
//
// # From a module of your own
//
// The module github.com/pith-dev/pith is not published yet, so an agent in
// another module reads it from a checkout of Pith with a replace directive
// before go mod tidy can resolve this package:
//
//	go mod init example.com/my-agent
//	go mod edit -replace github.com/pith-dev/pith=../pith
//	go mod tidy
//
// The repository's client/template is such a module to copy, and
// client/README.md the steps; the replace goes away once the module is
// published.
//
// # What is safe to send again
//
// A call's error says whether sending it again can do harm, and the client
// sends again, by itself, only what cannot (WithBusyRetries bounds how
// often):
//
//   - ErrBusy, the daemon's refusal of a caller with too many calls
//     running: nothing ran, so any call is retried.
//   - ErrUnavailable from a read — Open, Create, Context, LLMContext, Watch
//     — is retried: a read changes nothing (a second Create opens the
//     session the first made, also one another host made at the same
//     moment).
//   - ErrUnavailable or ErrCancelled (a deadline) from a write — Append,
//     AfterTurn, ReportError, Compact, Navigate, Close — is returned: the
//     write may have been stored before its answer was lost. Read the
//     session (Context) and send it again only if it is not there.
//   - ErrAborted: nothing was written. An append is aborted only when
//     another host moved the session to another branch or rewrote it since
//     the call's entries were made (an append that raced another host's is
//     simply appended after it): read the session and decide. A Compact
//     aborted because another host holds the session's lease (it is
//     compacting or pruning the session) can be sent again later.
//   - ErrResourceExhausted, ErrInvalidArgument, ErrPermissionDenied,
//     ErrFailedPrecondition, ErrNotFound, ErrUnauthenticated: the same call
//     fails the same way again.
//
// An ErrFailedPrecondition or ErrAborted error also matches the daemon's
// reason when it gave one (ErrNothingToCompact, ErrCancelledByPlugin,
// ErrBusyElsewhere, ...: reasons.go): branch on those, not on the words.
package client
