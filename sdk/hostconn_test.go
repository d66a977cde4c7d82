package sdk

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/hashicorp/go-hclog"
	pb "github.com/pith-dev/pith/internal/gen/pith/hooks/v1"
	"github.com/pith-dev/pith/internal/plugintls"
	"github.com/pith-dev/pith/internal/wire"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// logHost is a host API that answers Log and records the capabilities.
type logHost struct {
	pb.UnimplementedHostAPIServer
	mu     sync.Mutex
	tokens []string
}

func (h *logHost) Log(ctx context.Context, _ *pb.LogRequest) (*pb.LogResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	h.mu.Lock()
	h.tokens = append(h.tokens, md.Get(wire.CapabilityKey)...)
	h.mu.Unlock()
	return &pb.LogResponse{}, nil
}

type countingListener struct {
	net.Listener
	n atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

// tlsPair is the host's and the plugin's TLS configuration as the host and
// serveTLS make them, each pinning the other's certificate.
func tlsPair(t *testing.T) (hostCfg, pluginCfg *tls.Config) {
	t.Helper()
	host, err := plugintls.New()
	if err != nil {
		t.Fatal(err)
	}
	plug, err := plugintls.New()
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(plug.Cert.Leaf)
	hostCfg = host.ClientConfig()
	hostCfg.RootCAs, hostCfg.ClientCAs = pool, pool
	pluginCfg, err = plug.ServerConfig(host.PEM())
	if err != nil {
		t.Fatal(err)
	}
	return hostCfg, pluginCfg
}

// serveHostAPI serves api with cfg on a unix socket and returns its
// host_api_address and listener.
func serveHostAPI(t *testing.T, cfg *tls.Config, api pb.HostAPIServer) (string, *countingListener) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "host.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	cl := &countingListener{Listener: ln}
	srv := grpc.NewServer(grpc.Creds(credentials.NewTLS(cfg)))
	pb.RegisterHostAPIServer(srv, api)
	go func() { _ = srv.Serve(cl) }()
	t.Cleanup(srv.Stop)
	return "unix:" + path, cl
}

// during is a handler context for an event call carrying token.
func during(s *server, token string) context.Context {
	ctx := metadata.NewIncomingContext(context.Background(), metadata.Pairs(wire.CapabilityKey, token))
	return s.withHost(ctx)
}

// TestHostConnectsOnFirstCall: Describe with an address makes no
// connection; the first host calls, made at once, share the one they
// open, with the capability of each call; Shutdown closes it.
func TestHostConnectsOnFirstCall(t *testing.T) {
	hostCfg, pluginCfg := tlsPair(t)
	api := &logHost{}
	addr, ln := serveHostAPI(t, hostCfg, api)
	s := newServer(compactOnlyHandler{}, config{name: "lazy"})
	s.tls = pluginCfg
	if _, err := s.Describe(context.Background(), &pb.DescribeRequest{HostApiAddress: addr, HostApiBrokerId: 7}); err != nil {
		t.Fatal(err)
	}
	if st := s.conn.GetState(); st != connectivity.Idle {
		t.Fatalf("after Describe the host connection is %s, want IDLE", st)
	}
	const n = 8
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := during(s, string(rune('a'+i)))
			errs <- Host(ctx).Log(ctx, hclog.Info, "hello")
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := ln.n.Load(); got != 1 {
		t.Fatalf("%d connections to the host API, want 1", got)
	}
	if len(api.tokens) != n {
		t.Fatalf("capabilities seen by the host: %v", api.tokens)
	}
	conn := s.conn
	if _, err := s.Shutdown(context.Background(), &pb.ShutdownRequest{}); err != nil {
		t.Fatal(err)
	}
	if st := conn.GetState(); st != connectivity.Shutdown {
		t.Fatalf("after Shutdown the host connection is %s", st)
	}
	if err := Host(during(s, "z")).Log(context.Background(), hclog.Info, "gone"); !errors.Is(err, ErrNoHost) {
		t.Fatalf("host call after Shutdown: %v, want ErrNoHost", err)
	}
}

// TestHostOtherCertificateRefused: a listener at the address that does not
// show the certificate of PLUGIN_CLIENT_CERT gets no call.
func TestHostOtherCertificateRefused(t *testing.T) {
	_, pluginCfg := tlsPair(t)
	impostorCfg, _ := tlsPair(t) // another host's certificate
	api := &logHost{}
	addr, _ := serveHostAPI(t, impostorCfg, api)
	s := newServer(compactOnlyHandler{}, config{name: "lazy"})
	s.tls = pluginCfg
	if _, err := s.Describe(context.Background(), &pb.DescribeRequest{HostApiAddress: addr}); err != nil {
		t.Fatal(err)
	}
	ctx := during(s, "secret")
	err := Host(ctx).Log(ctx, hclog.Info, "to whom?")
	if status.Code(errors.Unwrap(err)) != codes.Unavailable {
		t.Fatalf("host call to an impostor: %v, want Unavailable", err)
	}
	if len(api.tokens) != 0 {
		t.Fatalf("the impostor got capabilities %v", api.tokens)
	}
	_, _ = s.Shutdown(context.Background(), &pb.ShutdownRequest{})
}

// TestHostAddressRefused: Describe with an address that is not
// unix:<path> or tcp:<host:port> fails with InvalidArgument.
func TestHostAddressRefused(t *testing.T) {
	for _, addr := range []string{"unix:", "tcp", "/tmp/x.sock", "udp:127.0.0.1:53", "http://localhost:80"} {
		s := newServer(compactOnlyHandler{}, config{name: "lazy"})
		_, err := s.Describe(context.Background(), &pb.DescribeRequest{HostApiAddress: addr})
		if status.Code(err) != codes.InvalidArgument {
			t.Errorf("address %q: %v, want InvalidArgument", addr, err)
		}
	}
}

// BenchmarkDialHostLazily is what Describe costs a plugin for the host
// API now: an idle gRPC channel, no connection.
func BenchmarkDialHostLazily(b *testing.B) {
	for b.Loop() {
		conn, err := dialHostLazily("unix:/nonexistent/host.sock", nil)
		if err != nil {
			b.Fatal(err)
		}
		_ = conn.Close()
	}
}
