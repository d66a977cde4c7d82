// Package clean hides secret completely.
package clean

import "leaky/internal/secret"

// N uses secret without exposing it.
func N() int { return secret.Conn{N: 1}.N }
