package wiring

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

// lockedBuffer is the daemon's stdout, read while it serves.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestServeAnnouncesAndStops: the daemon, run in process without the CLI,
// serves on the address it announces (stdout and the ready file) and
// returns cleanly once its context ends.
func TestServeAnnouncesAndStops(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "pith.json")
	data, _ := json.Marshal(map[string]any{"sessions": map[string]any{"root": filepath.Join(dir, "sessions")}})
	if err := os.WriteFile(cfgPath, data, 0o644); err != nil {
		t.Fatal(err)
	}
	ready := filepath.Join(dir, "ready")
	var stdout lockedBuffer
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, ServeOptions{
			ConfigPath: cfgPath, Listen: "127.0.0.1:0", ReadyFile: ready, Stdout: &stdout,
			Logger: hclog.NewInterceptLogger(&hclog.LoggerOptions{Output: &bytes.Buffer{}}), HostVersion: "test",
		})
	}()
	var addr string
	for deadline := time.Now().Add(30 * time.Second); addr == ""; {
		select {
		case err := <-done:
			t.Fatalf("Serve returned before serving: %v", err)
		default:
		}
		if b, err := os.ReadFile(ready); err == nil {
			addr = strings.TrimSpace(string(b))
		} else if time.Now().After(deadline) {
			t.Fatal("no ready file")
		} else {
			time.Sleep(10 * time.Millisecond)
		}
	}
	if got := stdout.String(); !strings.HasPrefix(got, "listening on "+addr+"\n") {
		t.Errorf("stdout %q, want the address %s", got, addr)
	}
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	c.Close()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Serve did not return after its context ended")
	}
}
