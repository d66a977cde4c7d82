package wiring

import (
	"fmt"
	"io"
	"net"
	"os"
	"strings"

	"github.com/hashicorp/go-hclog"
	"github.com/pith-dev/pith/config"
	"github.com/pith-dev/pith/internal/admission"
	"github.com/pith-dev/pith/store/files"
	"github.com/pith-dev/pith/viewer"
)

// ConnCaps are the connection caps of each of n listeners: the
// configured server.maxConnections and server.maxConnectionsPerAddress,
// or, where they are 0, their defaults derived from the descriptor
// limit in force. Go raised the soft limit to the hard one (less one)
// at start (package syscall), so the limit read here is all the process
// may get.
// A configured cap with which the listeners together could reach the
// limit is kept, with a warning: it no longer guards the descriptors.
func ConnCaps(cfg config.Server, n int, log hclog.Logger) admission.Caps {
	nofile := admission.DescriptorLimit()
	caps := admission.Resolve(cfg.MaxConnections, cfg.MaxConnectionsPerAddress, nofile, n)
	if nofile > 0 && uint64(caps.Total)*uint64(n) >= nofile {
		log.Warn("server.maxConnections lets the listeners together reach the descriptor limit: a flood of connections can leave none for sessions and calls",
			"maxConnections", caps.Total, "listeners", n, "descriptorLimit", nofile)
	}
	log.Debug("connection caps", "maxConnections", caps.Total, "maxConnectionsPerAddress", caps.PerKey, "listeners", n, "descriptorLimit", nofile)
	return caps
}

// ListenLimited is listenOn bounded by caps: every listener of the
// product goes through it.
func ListenLimited(addr, name string, caps admission.Caps, log hclog.Logger) (*admission.Listener, error) {
	lis, err := listenOn(addr)
	if err != nil {
		return nil, err
	}
	return admission.Listen(lis, admission.Options{Caps: caps, Name: name, Logger: log}), nil
}

func listenOn(addr string) (net.Listener, error) {
	if p, ok := strings.CutPrefix(addr, "unix:"); ok {
		// A socket left by a daemon that died is in the way; a live one
		// is not removed (the dial succeeds).
		if c, err := net.Dial("unix", p); err == nil {
			c.Close()
			return nil, fmt.Errorf("listen %s: another daemon is serving there", addr)
		}
		_ = os.Remove(p)
		// The socket is the daemon's door: only its owner may connect.
		// The umask covers the moment between bind and chmod; nothing
		// else creates files while the daemon starts listening.
		var lis net.Listener
		var err error
		withUmask(0o177, func() { lis, err = net.Listen("unix", p) })
		if err != nil {
			return nil, fmt.Errorf("listen %s: %w", addr, err)
		}
		if err := os.Chmod(p, 0o600); err != nil {
			lis.Close()
			return nil, fmt.Errorf("listen %s: %w", addr, err)
		}
		return lis, nil
	}
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", addr, err)
	}
	return lis, nil
}

// boundAddress is the address a client dials: host:port, or unix:/path.
func boundAddress(lis net.Listener) string {
	if lis.Addr().Network() == "unix" {
		return "unix:" + lis.Addr().String()
	}
	return lis.Addr().String()
}

// writeReadyFile writes addr atomically, so a poller never reads half.
func writeReadyFile(path, addr string) error {
	err := files.WriteAtomic(path, func(w io.Writer) error {
		_, err := io.WriteString(w, addr+"\n")
		return err
	})
	if err != nil {
		return fmt.Errorf("ready file: %w", err)
	}
	return nil
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// ViewerStreams are the caps of a viewer's live update streams on a
// listener bounded by caps: half of its connections, and half of one
// address's, so that its pages always find a connection.
func ViewerStreams(caps admission.Caps) viewer.StreamCaps {
	return viewer.StreamCaps{Max: max(caps.Total/2, 1), PerAddress: max(caps.PerKey/2, 1)}
}

// servesReflection reports whether the daemon's gRPC listener on addr
// serves server reflection (server.reflection): always with "on", on a
// loopback or unix: address with "auto", never with "off". A tool on
// this machine finds the service without setup; a listener other
// machines reach shows its schema only when asked to.
func servesReflection(s config.Server, addr string) bool {
	switch s.Reflection {
	case config.ReflectionOn:
		return true
	case config.ReflectionOff:
		return false
	}
	return config.Loopback(addr)
}
