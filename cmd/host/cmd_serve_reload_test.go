package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pith-dev/pith/client"
	pb "github.com/pith-dev/pith/internal/gen/pith/session/v1"
	"github.com/pith-dev/pith/internal/server"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// tenantServeYAML is a loopback daemon's configuration with one token per
// tenant; sessions.root comes last, so a file cut anywhere before its end
// moves the sessions.
func tenantServeYAML(keep int, tokens ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# pith serve\ncompaction:\n  keepRecentTokens: %d\nserver:\n  shutdownTimeout: 5s\n  workspaceRoot: ws\n  tokens:\n", keep)
	for _, tok := range tokens {
		fmt.Fprintf(&b, "    - name: %s\n      sha256: %s\n      prefix: %s/\n", tok, server.HashToken("secret-"+tok), tok)
	}
	b.WriteString("sessions:\n  root: sessions\n")
	return b.String()
}

// waitReload waits for the daemon's next reload outcome line: "config
// rejected" or "config reloaded" (a save still being written only delays
// it), and returns it.
func (p *serveProc) waitReload(t *testing.T) string {
	t.Helper()
	limit := time.After(30 * time.Second)
	for {
		select {
		case line := <-p.seen:
			if strings.Contains(line, "config rejected") || strings.Contains(line, "config reloaded") {
				return line
			}
		case <-p.done:
			t.Fatal("pith serve exited")
		case <-limit:
			t.Fatal("pith serve logged no reload outcome")
		}
	}
}

// TestServePartialConfigSave: a real `pith serve` with tenants' tokens on
// loopback, its configuration file saved in place and stopped empty,
// before `tokens:`, in the middle of a token and after the tokens. Each
// partial file is refused with one log line, and throughout an anonymous
// caller is refused by gRPC (a tenant's session by id, a create) and by
// the viewer, while the tenant's token still works; so too while a save is
// held open part-way, until it finishes and applies. The whole file saved
// by rename then reloads, and a rotated token replaces the old one.
func TestServePartialConfigSave(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "pith.yaml")
	full := tenantServeYAML(1000, "team-a", "team-b")
	if err := os.WriteFile(cfgPath, []byte(full), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startServe(t, cfgPath, "--viewer", "127.0.0.1:0")
	p.waitLog(t, "viewer: url=")
	var viewerURL string
	for _, line := range strings.Split(p.log(), "\n") {
		if _, after, ok := strings.Cut(line, "viewer: url="); ok {
			viewerURL = strings.TrimSpace(after)
		}
	}
	ctx := context.Background()
	dial := func(opts ...client.Option) *client.Client {
		c, err := client.Dial(p.addr, opts...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	a := dial(client.WithToken("secret-team-a"))
	sa, err := a.Create(ctx, "team-a/s.jsonl", "/w")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sa.AppendMessages(ctx, serveMessage("user", "private to team-a", 3)); err != nil {
		t.Fatal(err)
	}
	anon := dial()
	conn, err := grpc.NewClient(p.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rpc := pb.NewSessionServiceClient(conn)
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

	// locked checks that the daemon still authenticates as it did at start.
	locked := func(when string) {
		t.Helper()
		if _, err := rpc.GetContext(ctx, &pb.GetContextRequest{SessionId: sa.ID}); status.Code(err) != codes.Unauthenticated {
			t.Fatalf("%s: an anonymous GetContext of team-a's session: %v, want Unauthenticated", when, err)
		}
		if _, err := anon.Create(ctx, "team-a/anon.jsonl", "/w"); !errors.Is(err, client.ErrUnauthenticated) {
			t.Fatalf("%s: an anonymous Create: %v, want unauthenticated", when, err)
		}
		resp, err := noRedirect.Get(viewerURL)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("%s: the viewer's index answered an anonymous request with %d, want a redirect to /login", when, resp.StatusCode)
		}
		if _, err := sa.Context(ctx); err != nil {
			t.Fatalf("%s: team-a's own call: %v", when, err)
		}
	}
	locked("at start")

	save := func(content string) {
		t.Helper()
		f, err := os.OpenFile(cfgPath, os.O_WRONLY|os.O_TRUNC, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString(content); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	cut := func(mark string) string {
		i := strings.Index(full, mark)
		if i < 0 {
			t.Fatalf("%q not in the configuration", mark)
		}
		return full[:i]
	}
	for _, c := range []struct{ name, content, says string }{
		{"empty", "", "sets no key"},
		{"before tokens:", cut("  tokens:"), "remove authentication"},
		{"in the middle of a token", cut(server.HashToken("secret-team-a")[30:]), "server.tokens[0].sha256"},
		{"after the tokens", cut("sessions:"), "sessions.root would change"},
	} {
		save(c.content)
		// A save whose truncation was read alone is refused as empty
		// first: wait for this one's line.
		for {
			line := p.waitReload(t)
			if strings.Contains(line, "config reloaded") {
				t.Fatalf("a save stopped %s was applied: %s", c.name, line)
			}
			if strings.Contains(line, c.says) {
				break
			}
		}
		locked("after a save stopped " + c.name)
	}
	if _, err := os.Stat(filepath.Join(dir, "sessions", "team-a", "s.jsonl")); err != nil {
		t.Fatalf("team-a's session: %v", err)
	}

	// A save held open part-way, then finished: refused while it is
	// partial, applied once whole.
	next := tenantServeYAML(1500, "team-a", "team-b")
	f, err := os.OpenFile(cfgPath, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	head := next[:strings.Index(next, "  tokens:")]
	if _, err := f.WriteString(head); err != nil {
		t.Fatal(err)
	}
	for {
		line := p.waitReload(t)
		if strings.Contains(line, "config reloaded") {
			t.Fatalf("a save in progress was applied: %s", line)
		}
		if strings.Contains(line, "remove authentication") {
			break
		}
	}
	locked("during a save")
	if _, err := f.WriteString(next[len(head):]); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if line := p.waitReload(t); !strings.Contains(line, "config reloaded") || !strings.Contains(line, "compaction.keepRecentTokens") || strings.Contains(line, "server.tokens") {
		t.Fatalf("the finished save: %s", line)
	}
	locked("after the save finished")

	// The whole file, rotating team-a's token, saved by rename.
	tmp := cfgPath + ".tmp"
	if err := os.WriteFile(tmp, []byte(strings.Replace(tenantServeYAML(2000, "team-a", "team-b"), server.HashToken("secret-team-a"), server.HashToken("new-secret-team-a"), 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, cfgPath); err != nil {
		t.Fatal(err)
	}
	if line := p.waitReload(t); !strings.Contains(line, "config reloaded") {
		t.Fatalf("the whole file was not applied: %s", line)
	}
	if _, err := sa.Context(ctx); !errors.Is(err, client.ErrUnauthenticated) {
		t.Fatalf("the rotated-out token: %v, want unauthenticated", err)
	}
	if _, err := dial(client.WithToken("new-secret-team-a")).Create(ctx, "team-a/s2.jsonl", "/w"); err != nil {
		t.Fatalf("the new token: %v", err)
	}
	if _, err := anon.Create(ctx, "team-a/anon.jsonl", "/w"); !errors.Is(err, client.ErrUnauthenticated) {
		t.Fatalf("an anonymous Create after the reload: %v", err)
	}
	if logs := p.log(); strings.Contains(logs, server.HashToken("secret-team-a")) {
		t.Error("the log names a token's hash")
	}
}
