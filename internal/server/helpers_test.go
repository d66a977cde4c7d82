package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/pith-dev/pith/client"
	"github.com/pith-dev/pith/config"
	"github.com/pith-dev/pith/core/engine"
	"github.com/pith-dev/pith/core/summary"
	"github.com/pith-dev/pith/internal/pluginhost"
	"github.com/pith-dev/pith/store"
	"github.com/pith-dev/pith/summarize/builtin"
	"google.golang.org/grpc"
)

// testSettings is cmd/host's engineSettings for the keys the tests use.
func testSettings(c *config.Config) engine.Settings {
	s := engine.DefaultSettings()
	s.Enabled = c.Compaction.Enabled
	s.ReserveTokens = c.Compaction.ReserveTokens
	s.KeepRecentTokens = c.Compaction.KeepRecentTokens
	s.CalibrateKeepRecent = c.Compaction.CalibrateKeepRecent
	s.AutoContinue = c.Compaction.AutoContinue
	s.ContextWindow = c.ContextWindow
	s.BranchSummary.Enabled = c.BranchSummary.Enabled
	rh := c.Compaction.Rehydrate
	s.Rehydrate = engine.Rehydrate{Files: rh.Files, MaxTokensPerFile: rh.MaxTokensPerFile, TotalTokens: rh.TotalTokens}
	return s
}

// testConfig is the defaults with root as sessions.root and a small window,
// so that a few turns cross the compaction threshold.
func testConfig(root string) *config.Config {
	c := config.Defaults()
	c.Sessions.Root = root
	c.ContextWindow = 6000
	c.Compaction.ReserveTokens = 2000
	c.Compaction.KeepRecentTokens = 800
	// The branch budget is the session model's window minus this (pi's
	// rule): with the default 16 384 the small window leaves no room.
	c.BranchSummary.ReserveTokens = 2000
	return c
}

type harness struct {
	srv    *Server
	g      *grpc.Server
	client *client.Client
	addr   string
	// closed, when set, runs after the server stopped (the store it used).
	closed func()
}

// startServer runs a Server on a loopback port with a client connected;
// the cleanup closes everything in order.
func startServer(t testing.TB, cfg *config.Config) *harness {
	t.Helper()
	return startServerWith(t, cfg, nil)
}

// startServerWith is startServer with these plugins running.
func startServerWith(t testing.TB, cfg *config.Config, specs []pluginhost.Spec) *harness {
	t.Helper()
	return startHarness(t, cfg, nil, specs, nil)
}

// startHarness runs a Server with the test summarizer and settings on a
// loopback port, on st (nil: files) with these plugins, and connects a
// client; closed runs after the server stopped.
func startHarness(t testing.TB, cfg *config.Config, st store.Store, specs []pluginhost.Spec, closed func()) *harness {
	t.Helper()
	srv, err := New(context.Background(), Options{
		Config: cfg,
		Logger: hclog.New(&hclog.LoggerOptions{Level: hclog.Warn, Output: testWriter{t}}),
		Store:  st,
		Summarizer: func(*config.Config) (summary.Summarizer, error) {
			return builtin.New(builtin.Options{}), nil
		},
		Settings:    testSettings,
		PluginSpecs: func(*config.Config) []pluginhost.Spec { return specs },
	})
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer(srv.GRPCOptions()...)
	srv.Register(g, true)
	go func() { _ = g.Serve(lis) }()
	c, err := client.Dial(lis.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{srv: srv, g: g, client: c, addr: lis.Addr().String(), closed: closed}
	t.Cleanup(h.stop)
	return h
}

func (h *harness) stop() {
	if h.client == nil {
		return
	}
	h.client.Close()
	h.client = nil
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = h.srv.Close(ctx)
	h.g.GracefulStop()
	if h.closed != nil {
		h.closed()
	}
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// userMsg and assistantMsg make agent messages of about n tokens (4 bytes
// a token) tagged with tag, so that a test can find them in the file.
func userMsg(tag string, n int) json.RawMessage {
	return msg("user", tag, n, "")
}

func assistantMsg(tag string, n int) json.RawMessage {
	return msg("assistant", tag, n, `,"provider":"test","model":"m1","stopReason":"stop"`)
}

func msg(role, tag string, n int, extra string) json.RawMessage {
	text := tag + " " + strings.Repeat("word ", n*4/5)
	content := fmt.Sprintf(`[{"type":"text","text":%q}]`, text)
	return json.RawMessage(fmt.Sprintf(`{"role":%q,"content":%s,"timestamp":%d%s}`, role, content, time.Now().UnixMilli(), extra))
}
