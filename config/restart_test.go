package config

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestCheckReload: what a running process refuses to take from a reload,
// and what it takes (token rotation, adding authentication).
func TestCheckReload(t *testing.T) {
	base := Defaults()
	base.Sessions.Root = "/srv/pith/sessions"
	base.Server.WorkspaceRoot = "/srv/pith/ws"
	base.Server.Tokens = []Token{{Name: "team-a", SHA256: hexSum("a"), Prefix: "team-a/"}, {Name: "team-b", SHA256: hexSum("b"), Prefix: "team-b/"}}
	base.Server.TLS = ServerTLS{CertFile: "/c.pem", KeyFile: "/k.pem", ClientCAFile: "/ca.pem"}
	tests := []struct {
		name string
		edit func(c *Config)
		want string // "" accepted
	}{
		{"nothing that matters", func(c *Config) { c.Compaction.KeepRecentTokens++ }, ""},
		{"token rotated", func(c *Config) { c.Server.Tokens = []Token{{Name: "team-a2", SHA256: hexSum("a2"), Prefix: "team-a/"}} }, ""},
		{"token revoked, one left", func(c *Config) { c.Server.Tokens = c.Server.Tokens[:1] }, ""},
		{"client CA replaced", func(c *Config) { c.Server.TLS.ClientCAFile = "/ca2.pem" }, ""},
		{"prefix narrowed", func(c *Config) { c.Server.Tokens[0].Prefix = "team-a/x/" }, ""},
		{"token renamed", func(c *Config) { c.Server.Tokens[0].Name = "team-a-renamed" }, ""},
		{"prefix cut off (all sessions)", func(c *Config) { c.Server.Tokens[1].Prefix = "" },
			`the prefix of server.tokens[1] (team-b), which would reach every session instead of "team-b/"`},
		{"prefix moved", func(c *Config) { c.Server.Tokens[0].Prefix = "team-b/" }, `would reach "team-b/" instead of "team-a/"`},
		{"prefix widened, hash in upper case", func(c *Config) {
			c.Server.Tokens[0].SHA256 = strings.ToUpper(c.Server.Tokens[0].SHA256)
			c.Server.Tokens[0].Prefix = ""
		}, "server.tokens[0] (team-a)"},
		{"every token removed", func(c *Config) { c.Server.Tokens = nil }, "every server.tokens entry (2 in force)"},
		{"client certificates off", func(c *Config) { c.Server.TLS.ClientCAFile = "" }, "client certificates (server.tls.clientCAFile)"},
		{"TLS gone", func(c *Config) { c.Server.TLS = ServerTLS{} }, "client certificates"},
		{"sessions.root moved", func(c *Config) { c.Sessions.Root = "/home/u/.pith/sessions" }, `sessions.root would change from "/srv/pith/sessions" to "/home/u/.pith/sessions"`},
		{"workspaceRoot moved", func(c *Config) { c.Server.WorkspaceRoot = "" }, "server.workspaceRoot would change"},
		{"another sessions.store", func(c *Config) { c.Sessions.Store = "postgres://pith:hunter2@db.internal/pith" }, "sessions.store cannot change"},
		{"another sessions.leaseTTL", func(c *Config) { c.Sessions.LeaseTTL += time.Minute }, "sessions.leaseTTL is read at start"},
	}
	base.Plugins = []Plugin{
		{Name: "redact", Path: "/opt/pith/redact", Failure: FailureClosed, SHA256: hexSum("redact"), Timeout: time.Second},
		{Name: "audit", Path: "/opt/pith/audit", Failure: FailureOpen},
	}
	tests = append(tests, []struct {
		name string
		edit func(c *Config)
		want string
	}{
		{"plugin added", func(c *Config) {
			c.Plugins = append(c.Plugins, Plugin{Name: "guard", Path: "/g", Failure: FailureClosed})
		}, ""},
		{"fail-open plugin removed", func(c *Config) { c.Plugins = c.Plugins[:1] }, ""},
		{"fail-closed plugin's timeout changed", func(c *Config) { c.Plugins[0].Timeout = time.Minute }, ""},
		{"fail-closed plugin's checksum replaced", func(c *Config) { c.Plugins[0].SHA256 = hexSum("redact-2") }, ""},
		{"plugins reordered", func(c *Config) { c.Plugins[0], c.Plugins[1] = c.Plugins[1], c.Plugins[0] }, ""},
		{"every plugin gone (a save cut before plugins:)", func(c *Config) { c.Plugins = nil }, "plugin redact, which fails closed, would be removed"},
		{"fail-closed plugin renamed", func(c *Config) { c.Plugins[0].Name = "redact2" }, "plugin redact, which fails closed, would be removed"},
		{"fail-closed plugin fails open (a save cut after its path)", func(c *Config) { c.Plugins[0].Failure = FailureOpen }, "plugin redact would fail open instead of closed"},
		{"fail-closed plugin's checksum dropped", func(c *Config) { c.Plugins[0].SHA256 = "" }, "no longer be checked against its sha256"},
	}...)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			next := base.Clone()
			tt.edit(next)
			err := CheckReload(base, next)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrRestartNeeded) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want ErrRestartNeeded saying %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "\n") {
				t.Fatalf("not one line without secrets: %v", err)
			}
		})
	}
	// A daemon without authentication may gain some by a reload.
	open := Defaults()
	if err := CheckReload(open, base.Clone()); err == nil || strings.Contains(err.Error(), "authentication") {
		t.Fatalf("adding authentication: %v (only the roots may be refused)", err)
	}
	withTokens := open.Clone()
	withTokens.Server.Tokens = base.Server.Tokens
	if err := CheckReload(open, withTokens); err != nil {
		t.Fatalf("adding tokens refused: %v", err)
	}
}
