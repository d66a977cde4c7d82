// Package api leaks secret's types in every way the surface walker knows.
package api

import "leaky/internal/secret"

// Dial leaks through a result.
func Dial() *secret.Conn { return nil }

// Config leaks through an exported field; the unexported one does not count.
type Config struct {
	Opts []secret.Opt
	conn secret.Conn
}

// Alias leaks by being another name for a hidden type.
type Alias = secret.Conn

// Client leaks through an exported method's parameter.
type Client struct{}

func (Client) Use(map[string]secret.Opt) {}

func (Client) use(secret.Opt) {}

// Box leaks through an embedded field whose methods are promoted.
type Box struct{ impl }

type impl struct{ secret.Conn }

// Open leaks through an unexported type it hands out.
func Open() *handle { return nil }

type handle struct{ C chan secret.Conn }

// List leaks through a type argument.
var List []Generic[secret.Opt]

type Generic[T any] struct{ V T }

// Quiet uses a hidden type only inside its body.
func Quiet() int { return secret.Conn{}.N }
