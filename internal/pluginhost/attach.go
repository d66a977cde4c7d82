package pluginhost

import (
	"fmt"
	"io"
	"net"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"github.com/pith-dev/pith/internal/dispatch"
	"github.com/pith-dev/pith/internal/reattach"
	"github.com/pith-dev/pith/internal/wire"
)

// attach connects to a plugin already running in debug mode (Spec.Reattach)
// instead of starting a process. What the host does for a process it starts
// cannot apply: there is no binary to check against sha256, the plugin
// serves without TLS on its own socket, and the process is not the host's —
// it is never signalled, waited for, restarted or health-checked (it may
// sit at a breakpoint). Stopping it is only asking: the Shutdown RPC, then
// go-plugin's close, after which a plugin in debug mode ends on its own
// (go-plugin serves one client's broker per process). Each attach is
// logged as a warning, so that a configuration left in debug mode shows.
func (s *Supervisor) attach() (*instance, *remote, error) {
	rc, err := reattach.Parse(s.spec.Reattach)
	if err != nil {
		return nil, nil, fmt.Errorf("attach plugin %q: %w", s.spec.Name, err)
	}
	if rc.ProtocolVersion != wire.ProtocolVersion {
		return nil, nil, fmt.Errorf("attach plugin %q: it speaks protocol version %d, this host %d", s.spec.Name, rc.ProtocolVersion, wire.ProtocolVersion)
	}
	addr, err := resolveAddr(rc.Addr)
	if err != nil {
		return nil, nil, fmt.Errorf("attach plugin %q: %w", s.spec.Name, err)
	}
	s.log.Warn("attaching to a plugin running in debug mode: no sha256 check, no TLS; the host will not stop or restart it",
		"pid", rc.Pid, "address", rc.Addr.String, "sha256_ignored", s.spec.SHA256 != "")
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig: goPluginHandshake,
		// No version is negotiated when attaching: the plugin set is the
		// one of the version the plugin printed.
		Plugins: plugin.PluginSet{wire.PluginName: &hostPlugin{}},
		// Test: the process is responsible for its own exit, so that
		// go-plugin never kills it.
		Reattach:         &plugin.ReattachConfig{Protocol: plugin.Protocol(rc.Protocol), ProtocolVersion: rc.ProtocolVersion, Addr: addr, Pid: rc.Pid, Test: true},
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		StartTimeout:     s.opts.StartTimeout,
		Logger:           hclog.New(&hclog.LoggerOptions{Output: io.Discard, Level: hclog.Off}),
		GRPCDialOptions:  wire.DialOptions(),
	})
	lim := dispatch.LimitsOrDefaults(s.spec.Limits)
	// Its stderr is the developer's terminal; only its Log host calls
	// reach the host's log, under the usual rate limit.
	inst := &instance{client: client, pid: rc.Pid, done: make(chan struct{}), attached: true,
		relay: newRelayLimit(lim.StderrLinesPerSecond, lim.StderrBytesPerSecond)}
	r, err := handshake(client, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("attach plugin %q (%s %s): %w", s.spec.Name, rc.Addr.Network, rc.Addr.String, err)
	}
	inst.rpc = r.rpc
	return inst, r, nil
}

// detach closes the connection to an attached plugin the way go-plugin
// does (broker, controller shutdown, connection), which ends a plugin in
// debug mode; its process is left to exit on its own.
func (in *instance) detach() {
	if cp, err := in.client.Client(); err == nil {
		_ = cp.Close()
	}
}

func resolveAddr(a reattach.Addr) (net.Addr, error) {
	switch a.Network {
	case "unix":
		return net.ResolveUnixAddr("unix", a.String)
	case "tcp":
		return net.ResolveTCPAddr("tcp", a.String)
	}
	return nil, fmt.Errorf("unknown network %q", a.Network)
}

// where names what the supervisor runs, for messages.
func (s Spec) where() string {
	if s.Reattach != "" {
		if rc, err := reattach.Parse(s.Reattach); err == nil {
			return "attached at " + rc.Addr.String
		}
		return "attached (" + reattach.EnvPrefix + " unreadable)"
	}
	return s.Path
}
