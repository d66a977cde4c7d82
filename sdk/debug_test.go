package sdk

import (
	"bytes"
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"github.com/pith-dev/pith/hooks"
	pb "github.com/pith-dev/pith/internal/gen/pith/hooks/v1"
	"github.com/pith-dev/pith/internal/reattach"
	"github.com/pith-dev/pith/internal/wire"
	"google.golang.org/grpc"
)

var errNotHost = errors.New("sdk: a plugin cannot act as the host")

// attachPlugin is the host side of the hooks plugin for go-plugin's client.
type attachPlugin struct{ plugin.NetRPCUnsupportedPlugin }

func (attachPlugin) GRPCServer(*plugin.GRPCBroker, *grpc.Server) error { return errNotHost }

func (attachPlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return pb.NewHooksClient(c), nil
}

type compactOnlyHandler struct{}

func (compactOnlyHandler) Compact(context.Context, *hooks.CompactEvent) error { return nil }

// TestDebugMode: in debug mode the plugin prints a reattach configuration
// a go-plugin client attaches with, answers, and stops when the client
// closes.
func TestDebugMode(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d := startDebug(t, ctx, compactOnlyHandler{}, config{name: "dbg", version: "9.9.9"})
	desc, err := d.hooks.Describe(ctx, &pb.DescribeRequest{})
	if err != nil || desc.GetName() != "dbg" || desc.GetVersion() != "9.9.9" || len(desc.GetEvents()) != 1 {
		t.Fatalf("Describe = %v, %v", desc, err)
	}
	d.close(t, ctx)
}

// debugPlugin is a plugin served in debug mode and the go-plugin client
// attached to it, as a host attaches with a reattach configuration.
type debugPlugin struct {
	hooks  pb.HooksClient
	conn   plugin.ClientProtocol
	client *plugin.Client
	done   chan error
}

// startDebug serves h (a handler value or a ServeOpts) as Serve and
// ServePlugin do in debug mode and attaches to it; the plugin is stopped
// when the test ends.
func startDebug(t *testing.T, ctx context.Context, h Handler, cfg config) *debugPlugin {
	t.Helper()
	var out syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- serveDebug(ctx, newServer(handlerOf(h), cfg), &out)
	}()

	var line string
	for line == "" {
		select {
		case err := <-done:
			t.Fatalf("serveDebug returned early: %v", err)
		case <-time.After(10 * time.Millisecond):
			line = out.line()
		}
	}
	js, ok := strings.CutPrefix(line, EnvReattach+"=")
	if !ok {
		t.Fatalf("printed %q, want %s=<json>", line, EnvReattach)
	}
	rc, err := reattach.Parse(line)
	if err != nil || rc.ProtocolVersion != wire.ProtocolVersion || !rc.Test {
		t.Fatalf("reattach config %q: %+v, %v", js, rc, err)
	}
	addr, err := net.ResolveUnixAddr(rc.Addr.Network, rc.Addr.String)
	if err != nil {
		t.Fatal(err)
	}
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig: plugin.HandshakeConfig(wire.Handshake),
		// A reattaching client takes Plugins: there is no version to
		// negotiate.
		Plugins:          plugin.PluginSet{wire.PluginName: attachPlugin{}},
		Reattach:         &plugin.ReattachConfig{Protocol: plugin.Protocol(rc.Protocol), ProtocolVersion: rc.ProtocolVersion, Addr: addr, Pid: rc.Pid, Test: true},
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		Logger:           hclog.NewNullLogger(),
	})
	t.Cleanup(client.Kill)
	conn, err := client.Client()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := conn.Dispense(wire.PluginName)
	if err != nil {
		t.Fatal(err)
	}
	return &debugPlugin{hooks: raw.(pb.HooksClient), conn: conn, client: client, done: done}
}

// close closes the client and checks that the plugin stops serving.
func (d *debugPlugin) close(t *testing.T, ctx context.Context) {
	t.Helper()
	// Closing the client asks go-plugin's controller to stop the server.
	if err := d.conn.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-d.done:
		if err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		t.Fatal("the plugin kept serving after the client closed")
	}
}

// syncBuffer is written by the serving goroutine and read by the test.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) line() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.buf.String()
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return ""
}
