// Package sessionv1 holds the generated Go code of session.proto, the
// SessionService that `pith serve` offers agents. Regenerate with
// tools/proto.sh (make proto); only server and client import it.
package sessionv1
