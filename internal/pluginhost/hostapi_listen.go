package pluginhost

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"path/filepath"
	"runtime"
	"sync/atomic"

	"github.com/hashicorp/go-plugin"
	"github.com/pith-dev/pith/internal/dispatch"
	pb "github.com/pith-dev/pith/internal/gen/pith/hooks/v1"
	"github.com/pith-dev/pith/internal/privsock"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
)

// hostAPIEndpoint is the HostAPI gRPC server of one plugin instance. It is
// what go-plugin's GRPCBroker.AcceptAndServe would run, with one thing
// more: the listener's address, which the host gives the plugin in
// DescribeRequest.host_api_address. go-plugin's broker hands a plugin the
// address only for about 5 s after Describe, so a plugin that dials
// through it must connect at once — a TLS handshake, HTTP/2 and a gRPC
// channel at every start, although most plugins never call the host. With
// the address a plugin connects on its first host call, or never.
type hostAPIEndpoint struct {
	srv *grpc.Server
	// address is "<network>:<address>" of the listener, "" when it has
	// none a plugin could dial.
	address string
	// accepted counts the connections the listener accepted (tests).
	accepted atomic.Int64
	// served is closed once the server has stopped serving.
	served chan struct{}
}

// serveHostAPI opens the host API listener of broker id and serves api on
// it until stop. The listener is the broker's own (GRPCBroker.Accept: a
// unix socket in the 0700 directory go-plugin makes for the plugin
// process, or TCP on loopback where there are none), which also sends its
// address under id on the broker stream, so a plugin that dials through
// the broker (an older Go SDK, a plugin written against go-plugin) finds
// it as before. The server is the one
// AcceptAndServe makes: tlsCfg — the instance's, with the plugin's
// certificate pinned as the only accepted client — as its credentials
// (nil for an attached plugin in debug mode, which speaks no TLS), and
// the bounds of hostapi_bounds.go for api's limits. ctx bounds the wait for the broker stream.
//
// A plugin that does not serve go-plugin's broker (one written against the
// protocol in another language) closes its stream, at a moment that
// depends on scheduling; it reaches the host at the address alone, on a
// private socket (listenPrivate) in dir, the instance's socket directory.
// noBroker remembers that the plugin is one of those, so that its restarts
// go there directly: a failed Accept leaves go-plugin's listener open.
func serveHostAPI(ctx context.Context, broker *plugin.GRPCBroker, id uint32, tlsCfg *tls.Config, api *hostAPIServer, noBroker *atomic.Bool, dir string) (*hostAPIEndpoint, error) {
	var ln net.Listener
	err := ctx.Err()
	// An attached plugin (dir "") gets no broker listener: go-plugin would
	// make it in the temporary directory, and leave it there when the
	// plugin serves no broker (the Go SDK's, in debug mode) and Accept
	// fails; such a plugin reaches the host at the address.
	if err == nil && !noBroker.Load() && dir != "" {
		if ln, err = acceptBroker(ctx, broker, id); err != nil && ctx.Err() == nil {
			noBroker.Store(true)
		}
	}
	if ln == nil && ctx.Err() == nil {
		ln, err = listenPrivate(dir)
	}
	if err != nil {
		return nil, fmt.Errorf("host API listener: %w", err)
	}
	api.limits = dispatch.LimitsOrDefaults(api.limits)
	opts := api.serverOptions()
	if tlsCfg != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(tlsCfg)))
	}
	e := &hostAPIEndpoint{srv: grpc.NewServer(opts...), served: make(chan struct{})}
	pb.RegisterHostAPIServer(e.srv, api)
	if a := ln.Addr(); a.Network() == "unix" || a.Network() == "tcp" {
		e.address = a.Network() + ":" + a.String()
	}
	go func() {
		defer close(e.served)
		_ = e.srv.Serve(countingListener{Listener: limitConns(ln), n: &e.accepted})
	}()
	return e, nil
}

// listenPrivate listens on a unix socket in dir, the private directory
// (mode 0700) go-plugin made for the plugin process: the host removes it
// when it stops the plugin, and the plugin when the host is gone (a
// SIGKILLed host cannot). With no such directory (an attached plugin) the
// socket gets a new directory of mode 0700, which closing the listener
// removes; loopback TCP on Windows.
func listenPrivate(dir string) (net.Listener, error) {
	if runtime.GOOS == "windows" {
		return net.Listen("tcp", "127.0.0.1:0")
	}
	if dir != "" {
		return net.Listen("unix", filepath.Join(dir, "host-api"))
	}
	return privsock.Listen(socketTempDir(), "pith-host-api", "s")
}

// acceptBroker is broker.Accept(id) bounded by ctx. Accept blocks until
// the broker stream takes its message; when ctx ends first, the listener
// it may still return is closed (the broker closes with the instance,
// which ends the wait).
func acceptBroker(ctx context.Context, broker *plugin.GRPCBroker, id uint32) (net.Listener, error) {
	type result struct {
		ln  net.Listener
		err error
	}
	ch := make(chan result, 1)
	go func() {
		ln, err := broker.Accept(id)
		ch <- result{ln, err}
	}()
	select {
	case r := <-ch:
		return r.ln, r.err
	case <-ctx.Done():
		go func() {
			if r := <-ch; r.ln != nil {
				_ = r.ln.Close()
			}
		}()
		return nil, ctx.Err()
	}
}

// stop ends the server, its listener (removing the socket) and its
// connections. It is called once the instance's process is gone or
// detached, so no call is cut short that could still be answered.
func (e *hostAPIEndpoint) stop() { e.srv.Stop() }

// countingListener counts the connections it accepts.
type countingListener struct {
	net.Listener
	n *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

// omitHostAPIAddress makes describe send no host_api_address, as a host
// older than the field did; tests set it to run the SDK's broker dial.
var omitHostAPIAddress atomic.Bool

// stopHostAPI stops the instance's endpoint, if it has one.
func (in *instance) stopHostAPI() {
	if e := in.hostAPI.Swap(nil); e != nil {
		e.stop()
	}
}
