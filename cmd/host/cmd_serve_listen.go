package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"strings"

	"github.com/pith-dev/pith/core/session"
)

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
	err := session.WriteAtomic(path, func(w io.Writer) error {
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
