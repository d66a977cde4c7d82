package server

import (
	"context"
	"testing"
	"time"

	"github.com/pith-dev/pith/config"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// TestHealthWatchesStarveNobody: the health check is open to anyone and
// counts against its own connection's slots. Counted under the one
// anonymous caller, as it first was, a client holding maxCallsInFlight
// health Watch streams made every other probe fail busy — and on a daemon
// without tokens, every call of every (anonymous) caller.
func TestHealthWatchesStarveNobody(t *testing.T) {
	for _, tokens := range []bool{true, false} {
		cfg := testConfig(t.TempDir())
		cfg.Server.MaxCallsInFlight = 4
		if tokens {
			cfg.Server.Tokens = []config.Token{{Name: "ops", SHA256: HashToken("ops-token")}}
		}
		h := startServer(t, cfg)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		dial := func() healthpb.HealthClient {
			conn, err := grpc.NewClient(h.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { conn.Close() })
			return healthpb.NewHealthClient(conn)
		}
		hog := dial()
		for range 4 {
			w, err := hog.Watch(ctx, &healthpb.HealthCheckRequest{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.Recv(); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := dial().Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
			t.Errorf("tokens %v: a probe on its own connection, while another holds 4 health watches: %v", tokens, err)
		}
		if !tokens {
			if _, err := h.client.Create(ctx, "s.jsonl", "/w"); err != nil {
				t.Errorf("an anonymous call while another connection holds 4 health watches: %v", err)
			}
		}
		cancel()
	}
}
