// Package reattach is the printed form of the address of a plugin running
// in debug mode: the SDK prints it as PITH_PLUGIN_REATTACH=<json>, and the
// host reads it from a plugin's `reattach` configuration key to attach to
// that process instead of starting one. The JSON has the shape go-plugin
// based tools use for a reattach configuration (Terraform's
// TF_REATTACH_PROVIDERS):
//
//	{"Protocol":"grpc","ProtocolVersion":1,"Pid":4242,"Test":true,
//	 "Addr":{"Network":"unix","String":"/tmp/plugin123456"}}
package reattach

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
)

// EnvPrefix starts the line a plugin in debug mode prints: EnvPrefix, "=",
// then the JSON.
const EnvPrefix = "PITH_PLUGIN_REATTACH"

// ErrInvalid: the text is not a usable reattach configuration.
var ErrInvalid = errors.New("invalid reattach configuration")

// Config is where a plugin in debug mode serves.
type Config struct {
	Protocol        string
	ProtocolVersion int
	Pid             int
	// Test is true for a plugin that is responsible for its own exit,
	// which is what debug mode is; the host attaches as if it were so.
	Test bool
	Addr Addr
}

// Addr is a listener's address.
type Addr struct {
	// Network is "unix" (or "tcp" where unix sockets are missing).
	Network string
	String  string
}

// Parse reads a configuration, with or without the "PITH_PLUGIN_REATTACH="
// prefix of the printed line, and checks what the host needs of it.
func Parse(text string) (Config, error) {
	text = strings.TrimSpace(text)
	text = strings.TrimPrefix(text, EnvPrefix+"=")
	var c Config
	dec := json.NewDecoder(strings.NewReader(text))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return Config{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if dec.More() {
		return Config{}, fmt.Errorf("%w: text after the JSON object", ErrInvalid)
	}
	switch {
	case c.Protocol != "grpc":
		return Config{}, fmt.Errorf("%w: Protocol is %q, want \"grpc\"", ErrInvalid, c.Protocol)
	case c.ProtocolVersion <= 0:
		return Config{}, fmt.Errorf("%w: ProtocolVersion missing", ErrInvalid)
	case c.Pid <= 0:
		return Config{}, fmt.Errorf("%w: Pid missing", ErrInvalid)
	case c.Addr.Network != "unix" && c.Addr.Network != "tcp":
		return Config{}, fmt.Errorf("%w: Addr.Network is %q, want \"unix\" or \"tcp\"", ErrInvalid, c.Addr.Network)
	case c.Addr.String == "":
		return Config{}, fmt.Errorf("%w: Addr.String missing", ErrInvalid)
	case c.Addr.Network == "tcp" && !loopback(c.Addr.String):
		// A plugin in debug mode serves without TLS: only this machine
		// may reach it.
		return Config{}, fmt.Errorf("%w: Addr.String %q is not a loopback address", ErrInvalid, c.Addr.String)
	}
	return c, nil
}

func loopback(hostPort string) bool {
	host, _, err := net.SplitHostPort(hostPort)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return host == "localhost" || (ip != nil && ip.IsLoopback())
}

// Line is the line a plugin in debug mode prints, without its newline.
func (c Config) Line() (string, error) {
	b, err := json.Marshal(c)
	if err != nil {
		return "", err
	}
	return EnvPrefix + "=" + string(b), nil
}
