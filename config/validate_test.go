package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestValidateDefaults(t *testing.T) {
	if err := Defaults().Validate(); err != nil {
		t.Fatalf("the defaults must be valid: %v", err)
	}
}

func TestValidateRules(t *testing.T) {
	dir := t.TempDir()
	exe := writeExecutable(t, dir, "plugin")
	notExe := writeFile(t, dir, "data", "x")
	plugin := func(name string) Plugin {
		p := defaultPlugin()
		p.Name, p.Path = name, exe
		return p
	}
	tests := []struct {
		name        string
		mutate      func(c *Config)
		key, reason string
	}{
		{"reserve tokens", func(c *Config) { c.Compaction.ReserveTokens = 0 }, "compaction.reserveTokens", "must be > 0"},
		{"keep recent", func(c *Config) { c.Compaction.KeepRecentTokens = -1 }, "compaction.keepRecentTokens", "must be > 0"},
		{"reserve vs window", func(c *Config) { c.Compaction.ReserveTokens = 300000 }, "compaction.reserveTokens", "must be less than contextWindow (200000)"},
		{"strategy", func(c *Config) { c.Compaction.Strategy = "magic" }, "compaction.strategy", `must be one of summary|explore, got "magic"`},
		{"remote url scheme", func(c *Config) { c.Compaction.RemoteEndpoint.URL = "ftp://x" }, "compaction.remoteEndpoint.url", "absolute http or https URL"},
		{"remote url relative", func(c *Config) { c.Compaction.RemoteEndpoint.URL = "/summarize" }, "compaction.remoteEndpoint.url", "absolute http or https URL"},
		{"remote url password", func(c *Config) { c.Compaction.RemoteEndpoint.URL = "https://u:pw@x.example" }, "compaction.remoteEndpoint.url", "must not carry credentials in its user info"},
		{"remote url token user", func(c *Config) { c.Compaction.RemoteEndpoint.URL = "https://tok@x.example" }, "compaction.remoteEndpoint.url", "must not carry credentials"},
		{"remote url query key", func(c *Config) { c.Compaction.RemoteEndpoint.URL = "https://x.example/?api_key=abc" }, "compaction.remoteEndpoint.url", `query parameter "api_key"`},
		{"remote timeout", func(c *Config) { c.Compaction.RemoteEndpoint.Timeout = 0 }, "compaction.remoteEndpoint.timeout", "must be > 0"},
		{"remote retries", func(c *Config) { c.Compaction.RemoteEndpoint.Retries = -1 }, "compaction.remoteEndpoint.retries", "must be >= 0"},
		{"auth header", func(c *Config) { c.Compaction.RemoteEndpoint.AuthHeader = "Bad Header:" }, "compaction.remoteEndpoint.authHeader", "HTTP header name"},
		{"auth env holds a secret", func(c *Config) { c.Compaction.RemoteEndpoint.AuthEnv = "Bearer abc-123" }, "compaction.remoteEndpoint.authEnv", "must name an environment variable"},
		{"auth env without header", func(c *Config) {
			c.Compaction.RemoteEndpoint.AuthEnv, c.Compaction.RemoteEndpoint.AuthHeader = "TOKEN", ""
		}, "compaction.remoteEndpoint.authHeader", "must be set when authEnv is set"},
		{"explorer budget", func(c *Config) { c.Compaction.WorkerMaxTurns = 0 }, "compaction.workerMaxTurns", "must be > 0"},
		{"explore with builtin", func(c *Config) { c.Compaction.Strategy = StrategyExplore }, "compaction.strategy", "explore needs a tool-calling model, but the summarizer is builtin"},
		{"explore with remote", func(c *Config) {
			c.Compaction.Strategy = StrategyExplore
			c.Compaction.RemoteEndpoint.URL = "https://s.example/v1"
		}, "compaction.strategy", "the summarizer is remote"},
		{"overview order", func(c *Config) { c.Compaction.OverviewTargetTokens = 20000 }, "compaction.overviewTargetTokens", "must be <= overviewWarningTokens (16000)"},
		{"overview deadline", func(c *Config) { c.Compaction.OverviewWarningTokens = 50000 }, "compaction.overviewWarningTokens", "must be <= overviewDeadlineTokens (40000)"},
		{"final reserve", func(c *Config) { c.Compaction.FinalReserveTokens = 50000 }, "compaction.finalReserveTokens", "must be < workerContextMaxTokens (50000)"},
		{"finish warning", func(c *Config) { c.Compaction.FinishWarningRemainingTokens = 60000 }, "compaction.finishWarningRemainingTokens", "must be < workerContextMaxTokens"},
		{"summary target", func(c *Config) { c.Compaction.SummaryTargetTokens = 5000 }, "compaction.summaryTargetTokens", "must be <= summaryMaxTokens (4000)"},
		{"branch reserve", func(c *Config) { c.BranchSummary.ReserveTokens = 0 }, "branchSummary.reserveTokens", "must be > 0"},
		{"branch window", func(c *Config) { c.BranchSummary.ContextWindow = 1000 }, "branchSummary.reserveTokens", "must be less than branchSummary.contextWindow (1000)"},
		{"protect tokens", func(c *Config) { c.Pruning.ProtectTokens = -1 }, "pruning.protectTokens", "must be >= 0"},
		{"minimum savings", func(c *Config) { c.Pruning.MinimumSavings = -1 }, "pruning.minimumSavings", "must be >= 0"},
		{"protected tool empty", func(c *Config) { c.Pruning.ProtectedTools = []string{"read", " "} }, "pruning.protectedTools[1]", "must not be empty"},
		{"protected tool dup", func(c *Config) { c.Pruning.ProtectedTools = []string{"read", "read"} }, "pruning.protectedTools[1]", `duplicate "read"`},
		{"max retries", func(c *Config) { c.Retry.MaxRetries = -1 }, "retry.maxRetries", "must be >= 0"},
		{"base delay", func(c *Config) { c.Retry.BaseDelayMs = 0 }, "retry.baseDelayMs", "must be > 0"},
		{"max backoff", func(c *Config) { c.Retry.MaxBackoff = -time.Second }, "retry.maxBackoff", "must be > 0, got -1s"},
		{"provider", func(c *Config) { c.Summarizer.Provider = "gemini" }, "summarizer.provider", "must be one of builtin|openai|anthropic|remote"},
		{"model required", func(c *Config) { c.Summarizer.Provider = ProviderOpenAI }, "summarizer.model", "must be set for provider openai"},
		{"remote needs url", func(c *Config) { c.Summarizer.Provider = ProviderRemote }, "summarizer.provider", "remote needs compaction.remoteEndpoint.url"},
		{"base url", func(c *Config) { c.Summarizer.BaseURL = "localhost:8080" }, "summarizer.baseUrl", "absolute http or https URL"},
		{"api key env", func(c *Config) { c.Summarizer.APIKeyEnv = "sk-live-123" }, "summarizer.apiKeyEnv", "must name an environment variable"},
		{"max output", func(c *Config) { c.Summarizer.MaxOutputTokens = -1 }, "summarizer.maxOutputTokens", "must be >= 0"},
		{"candidate provider", func(c *Config) {
			c.Summarizer.Candidates = []Candidate{{Provider: "anthropic", Model: "m"}, {Provider: "x"}}
		}, "summarizer.candidates[1].provider", "must be one of"},
		{"candidate model", func(c *Config) { c.Summarizer.Candidates = []Candidate{{Provider: "anthropic"}} }, "summarizer.candidates[0].model", "must be set"},
		{"context window", func(c *Config) { c.ContextWindow = 0 }, "contextWindow", "must be > 0"},
		{"plugin name missing", func(c *Config) { c.Plugins = []Plugin{plugin("")} }, "plugins[0].name", "must be set"},
		{"plugin name chars", func(c *Config) { c.Plugins = []Plugin{plugin("a b")} }, "plugins[0].name", "must be letters, digits"},
		{"plugin duplicate", func(c *Config) {
			c.Plugins = []Plugin{plugin("audit"), plugin("x"), plugin("audit")}
		}, "plugins[2].name", `duplicate "audit" (also plugins[0])`},
		{"plugin path missing", func(c *Config) {
			p := plugin("a")
			p.Path = filepath.Join(dir, "nope")
			c.Plugins = []Plugin{p}
		}, "plugins[0].path", "no such file"},
		{"plugin path empty", func(c *Config) { p := plugin("a"); p.Path = ""; c.Plugins = []Plugin{p} }, "plugins[0].path", "must be set"},
		{"plugin path directory", func(c *Config) { p := plugin("a"); p.Path = dir; c.Plugins = []Plugin{p} }, "plugins[0].path", "not a regular file"},
		{"plugin not executable", func(c *Config) { p := plugin("a"); p.Path = notExe; c.Plugins = []Plugin{p} }, "plugins[0].path", "not executable"},
		{"plugin sha256", func(c *Config) { p := plugin("a"); p.SHA256 = "abc"; c.Plugins = []Plugin{p} }, "plugins[0].sha256", "must be 64 hex digits, got 3 characters"},
		{"plugin reattach", func(c *Config) { p := plugin("a"); p.Reattach = `{"Protocol":"grpc"}`; c.Plugins = []Plugin{p} }, "plugins[0].reattach", "invalid reattach configuration"},
		{"plugin sha256 not hex", func(c *Config) { p := plugin("a"); p.SHA256 = strings.Repeat("g", 64); c.Plugins = []Plugin{p} }, "plugins[0].sha256", "must be 64 hex digits"},
		{"plugin timeout", func(c *Config) { p := plugin("a"); p.Timeout = 0; c.Plugins = []Plugin{p} }, "plugins[0].timeout", "must be > 0"},
		{"plugin events unknown", func(c *Config) {
			p := plugin("a")
			p.Events = []string{"session_compact", "compact"}
			c.Plugins = []Plugin{p}
		}, "plugins[0].events", `unknown event "compact"`},
		{"plugin events twice", func(c *Config) {
			p := plugin("a")
			p.Events = []string{"session_tree", "session_tree"}
			c.Plugins = []Plugin{p}
		}, "plugins[0].events", `"session_tree" is listed twice`},
		{"plugin failure", func(c *Config) { p := plugin("a"); p.Failure = "ignore"; c.Plugins = []Plugin{p} }, "plugins[0].failure", `must be one of open|closed, got "ignore"`},
		{"plugin env name", func(c *Config) { p := plugin("a"); p.Env = map[string]string{"A-B": "x"}; c.Plugins = []Plugin{p} }, "plugins[0].env", `"A-B" is not an environment variable name`},
		{"sessions root", func(c *Config) { c.Sessions.Root = "" }, "sessions.root", "must not be empty"},
		{"listen", func(c *Config) { c.Server.Listen = "localhost" }, "server.listen", "must be host:port or unix:/path"},
		{"listen empty", func(c *Config) { c.Server.Listen = "" }, "server.listen", "must be set"},
		{"listen port", func(c *Config) { c.Server.Listen = "127.0.0.1:99999" }, "server.listen", "bad port"},
		{"metrics unix", func(c *Config) { c.Server.Metrics = "unix:" }, "server.metrics", "needs a socket path"},
		{"shutdown timeout", func(c *Config) { c.Server.ShutdownTimeout = 0 }, "server.shutdownTimeout", "must be > 0"},
		{"idle timeout", func(c *Config) { c.Server.IdleTimeout = 0 }, "server.idleTimeout", "must be > 0"},
		{"max open sessions", func(c *Config) { c.Server.MaxOpenSessions = 0 }, "server.maxOpenSessions", "must be > 0"},
		{"max open sessions per caller", func(c *Config) { c.Server.MaxOpenSessionsPerCaller = 0 }, "server.maxOpenSessionsPerCaller", "must be > 0"},
		{"viewer max sessions", func(c *Config) { c.Server.ViewerMaxSessions = 0 }, "server.viewerMaxSessions", "must be > 0"},
		{"viewer max bytes", func(c *Config) { c.Server.ViewerMaxBytes = 0 }, "server.viewerMaxBytes", "must be > 0"},
		{"viewer login idle", func(c *Config) { c.Server.ViewerLoginIdle = 0 }, "server.viewerLoginIdle", "must be > 0"},
		{"viewer login max age", func(c *Config) { c.Server.ViewerLoginMaxAge = -time.Second }, "server.viewerLoginMaxAge", "must be > 0"},
		{"max append", func(c *Config) { c.Server.MaxAppendBytes = -1 }, "server.maxAppendBytes", "must be > 0"},
		{"max session", func(c *Config) { c.Server.MaxSessionBytes = 0 }, "server.maxSessionBytes", "must be > 0"},
		{"max calls in flight", func(c *Config) { c.Server.MaxCallsInFlight = 0 }, "server.maxCallsInFlight", "must be > 0"},
		{"max connections", func(c *Config) { c.Server.MaxConnections = -1 }, "server.maxConnections", "must be >= 0"},
		{"max connections per address", func(c *Config) { c.Server.MaxConnectionsPerAddress = -1 }, "server.maxConnectionsPerAddress", "must be >= 0"},
		{"per address above total", func(c *Config) { c.Server.MaxConnections, c.Server.MaxConnectionsPerAddress = 10, 11 }, "server.maxConnectionsPerAddress", "must be <= server.maxConnections (10)"},
		{"handshake timeout", func(c *Config) { c.Server.HandshakeTimeout = 0 }, "server.handshakeTimeout", "must be > 0"},
		{"listen everywhere", func(c *Config) { c.Server.Listen = "0.0.0.0:7420" }, "server.listen", "set server.tls.certFile and server.tls.keyFile, and server.tls.clientCAFile or server.tokens"},
		{"listen no host", func(c *Config) { c.Server.Listen = ":7420" }, "server.listen", "reachable from other machines"},
		{"metrics exposed", func(c *Config) { c.Server.Metrics = "10.0.0.1:9464" }, "server.metrics", "reachable from other machines"},
		{"viewer exposed", func(c *Config) { c.Server.Viewer = "10.0.0.1:7421" }, "server.viewer", "reachable from other machines"},
		{"tls without auth", func(c *Config) {
			c.Server.Listen = "0.0.0.0:7420"
			c.Server.TLS = ServerTLS{CertFile: "c.pem", KeyFile: "k.pem"}
		}, "server.listen", "server.tls.clientCAFile or server.tokens"},
		{"tls half", func(c *Config) { c.Server.TLS.CertFile = "c.pem" }, "server.tls", "certFile and keyFile go together"},
		{"client ca alone", func(c *Config) { c.Server.TLS.ClientCAFile = "ca.pem" }, "server.tls.clientCAFile", "needs server.tls.certFile"},
		{"token raw", func(c *Config) { c.Server.Tokens = []Token{{Name: "a", SHA256: "s3cr3t-token"}} }, "server.tokens[0].sha256", "never the token itself"},
		{"token name", func(c *Config) { c.Server.Tokens = []Token{{SHA256: strings.Repeat("a", 64)}} }, "server.tokens[0].name", "must be set"},
		{"token duplicate", func(c *Config) {
			c.Server.Tokens = []Token{{Name: "a", SHA256: strings.Repeat("a", 64)}, {Name: "a", SHA256: strings.Repeat("b", 64)}}
		}, "server.tokens[1].name", `duplicate "a"`},
		{"token listed twice", func(c *Config) {
			c.Server.Tokens = []Token{{Name: "a", SHA256: strings.Repeat("ab", 32), Prefix: "team-a/"}, {Name: "b", SHA256: strings.Repeat("AB", 32), Prefix: "team-b/"}}
		}, "server.tokens[1].sha256", `the same token as server.tokens[0] ("a")`},
		{"token prefix dotdot", func(c *Config) {
			c.Server.Tokens = []Token{{Name: "a", SHA256: strings.Repeat("a", 64), Prefix: "../"}}
		}, "server.tokens[0].prefix", "must be"},
		{"token prefix no slash", func(c *Config) {
			c.Server.Tokens = []Token{{Name: "a", SHA256: strings.Repeat("a", 64), Prefix: "team-a"}}
		}, "server.tokens[0].prefix", `ending in "/"`},
		{"deny pattern glob", func(c *Config) { c.Workspace.Deny = []string{"ok", "[x"} }, "workspace.deny[1]", "syntax error in pattern"},
		{"deny pattern absolute", func(c *Config) { c.Workspace.Deny = []string{"/home/u/.ssh"} }, "workspace.deny[0]", "without a leading /"},
		{"deny pattern dotdot", func(c *Config) { c.Workspace.Deny = []string{"a/../b"} }, "workspace.deny[0]", `".."`},
		{"workspace root empty", func(c *Config) { c.Workspace.Roots = []string{" "} }, "workspace.roots[0]", "must not be empty"},
		{"log level", func(c *Config) { c.Logging.Level = "verbose" }, "logging.level", "must be one of trace|debug|info|warn|error|off"},
		{"log format", func(c *Config) { c.Logging.Format = "xml" }, "logging.format", "must be one of text|json"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := Defaults()
			tc.mutate(c)
			ps := problemsOf(t, c.Validate())
			if !hasProblem(ps, tc.key, tc.reason) {
				t.Errorf("want %s: …%s…, got %v", tc.key, tc.reason, ps)
			}
		})
	}
}

func TestValidateAccepts(t *testing.T) {
	dir := t.TempDir()
	exe := writeExecutable(t, dir, "plugin")
	c := Defaults()
	c.Compaction.Strategy = StrategyExplore
	c.Compaction.RemoteEndpoint = RemoteEndpoint{URL: "https://s.example/v1", Timeout: time.Second, AuthHeader: "X-Api-Key", AuthEnv: "SUM_KEY"}
	c.Summarizer = Summarizer{Provider: ProviderOpenAI, Model: "gpt-4o", Candidates: []Candidate{
		{Provider: ProviderOpenAI, Model: "gpt-4o-mini", BaseURL: "http://127.0.0.1:11434/v1", APIKeyEnv: "OPENAI_API_KEY"},
		{Provider: ProviderBuiltin},
	}}
	p := defaultPlugin()
	p.Name, p.Path, p.SHA256, p.Failure = "audit.v2", exe, strings.Repeat("aB", 32), FailureClosed
	p.Env = map[string]string{"_X1": "y"}
	c.Plugins = []Plugin{p}
	c.Server.Listen, c.Server.Metrics, c.Server.ShutdownTimeout = "unix:/run/pith.sock", "localhost:9464", time.Second
	c.Logging.Level = "DEBUG"
	if err := c.Validate(); err != nil {
		t.Fatalf("valid configuration rejected: %v", err)
	}
	// A plugin attached to in debug mode needs no path.
	dbg := defaultPlugin()
	dbg.Name, dbg.Reattach = "dbg", `PITH_PLUGIN_REATTACH={"Protocol":"grpc","ProtocolVersion":1,"Pid":7,"Test":true,"Addr":{"Network":"unix","String":"/tmp/plugin1"}}`
	c.Plugins = []Plugin{p, dbg}
	if err := c.Validate(); err != nil {
		t.Fatalf("attached plugin rejected: %v", err)
	}
	// Exposed, with TLS and tokens scoped to a tenant.
	c.Server.Listen, c.Server.Metrics = "0.0.0.0:7420", "[::]:9464"
	c.Server.TLS = ServerTLS{CertFile: "c.pem", KeyFile: "k.pem"}
	c.Server.Tokens = []Token{{Name: "team-a", SHA256: strings.Repeat("0f", 32), Prefix: "team-a/x.y/"}, {Name: "ops", SHA256: strings.Repeat("a", 64)}}
	if err := c.Validate(); err != nil {
		t.Fatalf("valid exposed configuration rejected: %v", err)
	}
	// Exposed with mutual TLS only.
	c.Server.Tokens = nil
	c.Server.TLS.ClientCAFile = "ca.pem"
	if err := c.Validate(); err != nil {
		t.Fatalf("valid mTLS configuration rejected: %v", err)
	}
}

func TestValidateReportsEverything(t *testing.T) {
	path := writeFile(t, t.TempDir(), "c.yaml", `
compaction:
  reserveTokens: 0
  strategy: fast
  bogus: 1
plugins:
  - name: audit
    path: ./missing
    failure: sometimes
  - name: audit
    path: ./missing
    sha256: "12"
    timeout: soon
`)
	_, err := Load(path, noEnv)
	ps := problemsOf(t, err)
	want := []struct{ key, reason string }{
		{"compaction.bogus", "unknown key"},
		{"plugins[1].timeout", "must be a duration"},
		{"compaction.reserveTokens", "must be > 0"},
		{"compaction.strategy", "must be one of"},
		{"plugins[0].path", "no such file"},
		{"plugins[0].failure", "must be one of open|closed"},
		{"plugins[1].name", `duplicate "audit"`},
		{"plugins[1].sha256", "must be 64 hex digits"},
	}
	for _, w := range want {
		if !hasProblem(ps, w.key, w.reason) {
			t.Errorf("missing %s: …%s…", w.key, w.reason)
		}
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, path+": ") || !strings.Contains(msg, " problems: ") || strings.Contains(msg, "\n") {
		t.Errorf("want one line naming the file and counting problems, got %q", msg)
	}
}

func TestValidateExecutableFollowsSymlink(t *testing.T) {
	dir := t.TempDir()
	exe := writeExecutable(t, dir, "real")
	link := filepath.Join(dir, "link")
	if err := os.Symlink(exe, link); err != nil {
		t.Skip("symlinks not available:", err)
	}
	c := Defaults()
	p := defaultPlugin()
	p.Name, p.Path = "a", link
	c.Plugins = []Plugin{p}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
}
