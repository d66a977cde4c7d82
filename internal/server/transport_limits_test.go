package server

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
)

// TestHeadersBounded: request headers are read whole, before
// authentication, by anyone who can connect: a call carrying megabytes of
// metadata must be refused by the transport. Before, gRPC's default let
// every call of an anonymous caller make the daemon hold 16 MiB of
// headers — here 1 MiB went through on the health check, the call open to
// everyone. A call with ordinary headers still passes.
func TestHeadersBounded(t *testing.T) {
	h := startServer(t, testConfig(t.TempDir()))
	conn, err := grpc.NewClient(h.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	hc := healthpb.NewHealthClient(conn)
	ctx := context.Background()
	if _, err := hc.Check(metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+strings.Repeat("t", 100)), &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatalf("ordinary headers: %v", err)
	}
	big := metadata.AppendToOutgoingContext(ctx, "x-padding", strings.Repeat("p", 1<<20))
	if _, err := hc.Check(big, &healthpb.HealthCheckRequest{}); err == nil {
		t.Fatal("a call with 1 MiB of headers was served")
	} else {
		t.Logf("refused: %v", err)
	}
	if _, err := hc.Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatalf("an ordinary call after the refusal: %v", err)
	}
}

// TestIdleConnectionsClosed: a connection with no call running is closed
// after connIdle. Before, a connection that made one call (or none — the
// health check needs no credentials, nor does the TLS handshake on an
// address protected by tokens) was kept for as long as the client liked:
// idle connections piled up without bound, each with its buffers and
// goroutines (the test's connection was still open after 30 s). A
// connection with a stream open (WatchEvents) is not idle.
func TestIdleConnectionsClosed(t *testing.T) {
	old := connIdle
	connIdle = 200 * time.Millisecond
	t.Cleanup(func() { connIdle = old })
	h := startServer(t, testConfig(t.TempDir()))
	conn, err := grpc.NewClient(h.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := healthpb.NewHealthClient(conn).Check(context.Background(), &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatal(err)
	}
	if conn.GetState() != connectivity.Ready {
		t.Fatalf("state after a call: %v", conn.GetState())
	}
	// The server's GOAWAY moves the client's connection out of Ready; the
	// bound only keeps a broken build from hanging the test.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if !conn.WaitForStateChange(ctx, connectivity.Ready) {
		t.Fatal("an idle connection was still open after 30 s")
	}
}
