// Package secret stands for a package under internal/ whose types must not
// reach a public API.
package secret

type Conn struct{ N int }

type Opt int

func (Conn) Close() error { return nil }
