package server

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc"
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
