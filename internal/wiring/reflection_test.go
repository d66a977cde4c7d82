package wiring

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/pith-dev/pith/config"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"
)

// serveWith runs the daemon in process with the configuration cfg (the
// sessions root is added) on a loopback port and returns its address.
func serveWith(t *testing.T, cfg map[string]any) string {
	t.Helper()
	dir := t.TempDir()
	cfg["sessions"] = map[string]any{"root": filepath.Join(dir, "sessions")}
	cfgPath := filepath.Join(dir, "pith.json")
	data, _ := json.Marshal(cfg)
	if err := os.WriteFile(cfgPath, data, 0o644); err != nil {
		t.Fatal(err)
	}
	ready := filepath.Join(dir, "ready")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, ServeOptions{
			ConfigPath: cfgPath, Listen: "127.0.0.1:0", ReadyFile: ready, Stdout: &lockedBuffer{},
			Logger: hclog.NewInterceptLogger(&hclog.LoggerOptions{Output: &bytes.Buffer{}}), HostVersion: "test",
		})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("Serve did not return")
		}
	})
	for deadline := time.Now().Add(30 * time.Second); ; {
		select {
		case err := <-done:
			t.Fatalf("Serve returned before serving: %v", err)
		default:
		}
		if b, err := os.ReadFile(ready); err == nil && len(b) > 0 {
			return strings.TrimSpace(string(b))
		}
		if time.Now().After(deadline) {
			t.Fatal("no ready file")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// listServices asks the daemon's server reflection for its services,
// with no token.
func listServices(t *testing.T, conn *grpc.ClientConn) ([]string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stream, err := reflectionpb.NewServerReflectionClient(conn).ServerReflectionInfo(ctx)
	if err != nil {
		return nil, err
	}
	if err := stream.Send(&reflectionpb.ServerReflectionRequest{
		MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{ListServices: "*"},
	}); err != nil {
		return nil, err
	}
	resp, err := stream.Recv()
	if err != nil {
		return nil, err
	}
	var names []string
	for _, s := range resp.GetListServicesResponse().GetService() {
		names = append(names, s.GetName())
	}
	return names, nil
}

// TestReflectionWithoutToken: a daemon with tokens, on loopback, answers
// grpcurl's questions without one — server reflection lists the
// SessionService and the health check says SERVING — while the
// SessionService itself still wants a token; server.reflection: off
// turns reflection off.
func TestReflectionWithoutToken(t *testing.T) {
	tokens := []map[string]any{{"name": "team-a", "prefix": "team-a/",
		"sha256": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"}}
	for _, mode := range []string{"auto", "off"} {
		t.Run(mode, func(t *testing.T) {
			addr := serveWith(t, map[string]any{"server": map[string]any{"tokens": tokens, "reflection": mode}})
			conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			names, err := listServices(t, conn)
			switch mode {
			case "auto":
				if err != nil {
					t.Fatalf("reflection without a token: %v", err)
				}
				if !strings.Contains(strings.Join(names, " "), "pith.session.v1.SessionService") {
					t.Errorf("reflection lists %v, want the SessionService among them", names)
				}
			case "off":
				if status.Code(err) != codes.Unimplemented {
					t.Errorf("reflection with server.reflection off: %v (services %v), want Unimplemented", err, names)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			h, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
			if err != nil || h.GetStatus() != healthpb.HealthCheckResponse_SERVING {
				t.Errorf("health check without a token: %v, %v", h, err)
			}
			err = conn.Invoke(ctx, "/pith.session.v1.SessionService/ListSessions", &healthpb.HealthCheckRequest{}, &healthpb.HealthCheckResponse{})
			if status.Code(err) != codes.Unauthenticated {
				t.Errorf("a SessionService call without a token: %v, want Unauthenticated", err)
			}
		})
	}
}

// TestServesReflection is server.reflection's rule for each listener.
func TestServesReflection(t *testing.T) {
	for _, c := range []struct {
		mode, addr string
		want       bool
	}{
		{"auto", "127.0.0.1:7420", true}, {"auto", "unix:/run/pith.sock", true}, {"auto", ":7420", false},
		{"on", ":7420", true}, {"off", "127.0.0.1:7420", false},
	} {
		s := config.Defaults().Server
		s.Reflection = c.mode
		if got := servesReflection(s, c.addr); got != c.want {
			t.Errorf("reflection %s on %s: %v, want %v", c.mode, c.addr, got, c.want)
		}
	}
}
