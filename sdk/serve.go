package sdk

import (
	"context"
	"os"
	"path/filepath"

	"github.com/hashicorp/go-plugin"
	"github.com/pith-dev/pith/hooks"
	"github.com/pith-dev/pith/hooks/wire"
	pb "github.com/pith-dev/pith/proto/pith/hooks/v1"
	"google.golang.org/grpc"
)

// Option configures Serve.
type Option func(*config)

type config struct {
	name    string
	version string
}

// WithName sets the name the plugin reports in Describe; default the
// executable's base name. The host logs and namespaces by its configured
// name either way.
func WithName(name string) Option { return func(c *config) { c.name = name } }

// WithVersion sets the version the plugin reports in Describe.
func WithVersion(v string) Option { return func(c *config) { c.version = v } }

// Serve runs p as a plugin until the host stops it or dies. p implements one
// or more handler interfaces; only those events are reported to the host and
// sent by it. Call Serve from main; run outside Pith it prints a notice and
// exits with status 1.
func Serve(p any, opts ...Option) {
	cfg := config{name: filepath.Base(os.Args[0]), version: "0.0.0"}
	for _, o := range opts {
		o(&cfg)
	}
	log := Logger()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	onTerminate(log)
	go watchParent(ctx, func() { hostGone(log, "host process is gone") })
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: wire.Handshake,
		VersionedPlugins: map[int]plugin.PluginSet{
			wire.ProtocolVersion: {wire.PluginName: &grpcPlugin{srv: newServer(p, cfg)}},
		},
		GRPCServer: wire.NewServer,
		Logger:     log,
	})
}

// grpcPlugin is the go-plugin glue: it registers the Hooks service.
type grpcPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	srv *server
}

func (g *grpcPlugin) GRPCServer(broker *plugin.GRPCBroker, s *grpc.Server) error {
	g.srv.broker = broker
	pb.RegisterHooksServer(s, g.srv)
	return nil
}

func (g *grpcPlugin) GRPCClient(context.Context, *plugin.GRPCBroker, *grpc.ClientConn) (any, error) {
	return nil, errNotHost
}

// Events reports the events p handles, as Serve would describe them.
func Events(p any) []hooks.EventID { return hooks.DetectEvents(p) }
