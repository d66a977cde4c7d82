// Package sessionv1 holds the Go generated from
// proto/pith/session/v1/session.proto, the SessionService that `pith serve`
// offers agents. Only server and client import it. It is internal because
// the public client package wraps it completely — no exported name of
// client mentions these types — so Go agents use client, and agents in
// other languages generate their own code from the .proto file. Regenerate
// with tools/proto.sh (make proto).
package sessionv1
