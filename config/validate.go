package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"regexp"
	"runtime"
	"strings"
	"sync"

	"github.com/pith-dev/pith/core/workspace"
	"github.com/pith-dev/pith/hooks"
	"github.com/pith-dev/pith/internal/checksum"
	"github.com/pith-dev/pith/internal/reattach"
)

// ErrInvalid is wrapped by every error that reports problems in the
// configuration's content (as opposed to a file that cannot be read).
var ErrInvalid = errors.New("invalid configuration")

// Problem is one thing wrong with a configuration, named by its key.
type Problem struct {
	Key    string // e.g. "plugins[2].name", or a PITH_ variable
	Reason string // e.g. `duplicate "audit"`
}

func (p Problem) String() string { return p.Key + ": " + p.Reason }

// ValidationError lists every problem found in one configuration.
type ValidationError struct {
	Source   string // the file, or "" for defaults and environment only
	Problems []Problem
}

func (e *ValidationError) Error() string {
	var b strings.Builder
	if e.Source != "" {
		b.WriteString(e.Source)
		b.WriteString(": ")
	}
	if len(e.Problems) == 1 {
		b.WriteString(e.Problems[0].String())
		return b.String()
	}
	fmt.Fprintf(&b, "%d problems: ", len(e.Problems))
	for i, p := range e.Problems {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(p.String())
	}
	return b.String()
}

// Unwrap lets errors.Is(err, ErrInvalid) find a ValidationError.
func (e *ValidationError) Unwrap() error { return ErrInvalid }

// The patterns are compiled on first use: a command that loads no
// configuration does not pay for them at start.
var (
	envNamePattern    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })
	headerPattern     = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$") })
	pluginNamePattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`) })
)

var (
	logLevels    = []string{"trace", "debug", "info", "warn", "error", "off"}
	logFormats   = []string{"text", "json"}
	strategies   = []string{StrategySummary, StrategyExplore}
	calibrations = []string{CalibrationDelta, CalibrationTotal}
	providers    = []string{ProviderBuiltin, ProviderOpenAI, ProviderAnthropic, ProviderRemote}
	failures     = []string{FailureOpen, FailureClosed}
)

// Validate checks the configuration as a whole and reports every problem at
// once. Plugin paths are checked on disk: each must be an executable file.
func (c *Config) Validate() error {
	v := &validator{}
	v.compaction(&c.Compaction, c.ContextWindow)
	v.branchSummary(&c.BranchSummary)
	v.pruning(&c.Pruning)
	v.retry(&c.Retry)
	v.summarizer(&c.Summarizer, &c.Compaction.RemoteEndpoint)
	v.exploreModel(c)
	v.positive("contextWindow", c.ContextWindow)
	v.plugins(c.Plugins)
	v.server(&c.Server)
	v.workspace(&c.Workspace)
	v.oneOf("logging.level", strings.ToLower(c.Logging.Level), logLevels)
	v.oneOf("logging.format", c.Logging.Format, logFormats)
	if strings.TrimSpace(c.Sessions.Root) == "" {
		v.add("sessions.root", "must not be empty")
	}
	v.store(c.Sessions.Store, c.Sessions.LeaseTTL)
	if len(v.problems) == 0 {
		return nil
	}
	return &ValidationError{Problems: v.problems}
}

type validator struct {
	problems []Problem
}

func (v *validator) add(key, format string, args ...any) {
	v.problems = append(v.problems, Problem{Key: key, Reason: fmt.Sprintf(format, args...)})
}

func (v *validator) positive(key string, n int) {
	if n <= 0 {
		v.add(key, "must be > 0, got %d", n)
	}
}

func (v *validator) nonNegative(key string, n int) {
	if n < 0 {
		v.add(key, "must be >= 0, got %d", n)
	}
}

func (v *validator) oneOf(key, value string, allowed []string) {
	for _, a := range allowed {
		if value == a {
			return
		}
	}
	v.add(key, "must be one of %s, got %q", strings.Join(allowed, "|"), value)
}

// envName checks a key that names an environment variable. The value is
// not echoed: a user who pasted the secret itself here must not see it in
// logs.
func (v *validator) envName(key, value string) {
	if value != "" && !envNamePattern().MatchString(value) {
		v.add(key, "must name an environment variable (letters, digits, _), not hold the credential itself")
	}
}

func (v *validator) httpURL(key, value string) {
	if value == "" {
		return
	}
	u, err := url.Parse(value)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		v.add(key, "must be an absolute http or https URL")
		return
	}
	if u.User != nil {
		v.add(key, "must not carry credentials in its user info; name an environment variable instead")
	}
	for name := range u.Query() {
		if secretName(name) {
			v.add(key, "must not carry a credential in query parameter %q; name an environment variable instead", name)
		}
	}
}

func (v *validator) compaction(c *Compaction, contextWindow int) {
	v.positive("compaction.reserveTokens", c.ReserveTokens)
	v.positive("compaction.keepRecentTokens", c.KeepRecentTokens)
	if c.ReserveTokens > 0 && contextWindow > 0 && c.ReserveTokens >= contextWindow {
		v.add("compaction.reserveTokens", "must be less than contextWindow (%d), got %d", contextWindow, c.ReserveTokens)
	}
	v.oneOf("compaction.strategy", c.Strategy, strategies)
	v.oneOf("compaction.calibrationMethod", c.CalibrationMethod, calibrations)
	v.nonNegative("compaction.rehydrate.files", c.Rehydrate.Files)
	v.positive("compaction.rehydrate.maxTokensPerFile", c.Rehydrate.MaxTokensPerFile)
	v.positive("compaction.rehydrate.totalTokens", c.Rehydrate.TotalTokens)

	r := &c.RemoteEndpoint
	v.httpURL("compaction.remoteEndpoint.url", r.URL)
	if r.Timeout <= 0 {
		v.add("compaction.remoteEndpoint.timeout", "must be > 0, got %s", formatDuration(r.Timeout))
	}
	v.nonNegative("compaction.remoteEndpoint.retries", r.Retries)
	if r.AuthHeader != "" && !headerPattern().MatchString(r.AuthHeader) {
		v.add("compaction.remoteEndpoint.authHeader", "must be an HTTP header name, got %q", r.AuthHeader)
	}
	v.envName("compaction.remoteEndpoint.authEnv", r.AuthEnv)
	if r.AuthEnv != "" && r.AuthHeader == "" {
		v.add("compaction.remoteEndpoint.authHeader", "must be set when authEnv is set")
	}

	budgets := []struct {
		key string
		n   int
	}{
		{"retainedTokens", c.RetainedTokens},
		{"overviewTargetTokens", c.OverviewTargetTokens},
		{"overviewWarningTokens", c.OverviewWarningTokens},
		{"overviewDeadlineTokens", c.OverviewDeadlineTokens},
		{"workerContextMaxTokens", c.WorkerContextMaxTokens},
		{"finishWarningRemainingTokens", c.FinishWarningRemainingTokens},
		{"finalReserveTokens", c.FinalReserveTokens},
		{"workerMaxTurns", c.WorkerMaxTurns},
		{"summaryTargetTokens", c.SummaryTargetTokens},
		{"summaryMaxTokens", c.SummaryMaxTokens},
		{"autoReadBudgetTokens", c.AutoReadBudgetTokens},
		{"resultContextMaxTokens", c.ResultContextMaxTokens},
	}
	ok := true
	for _, b := range budgets {
		if b.n <= 0 {
			v.add("compaction."+b.key, "must be > 0, got %d", b.n)
			ok = false
		}
	}
	if !ok {
		return // the orderings below would only repeat the same problem
	}
	v.atMost("compaction.overviewTargetTokens", c.OverviewTargetTokens, "overviewWarningTokens", c.OverviewWarningTokens)
	v.atMost("compaction.overviewWarningTokens", c.OverviewWarningTokens, "overviewDeadlineTokens", c.OverviewDeadlineTokens)
	v.below("compaction.finalReserveTokens", c.FinalReserveTokens, "workerContextMaxTokens", c.WorkerContextMaxTokens)
	v.below("compaction.finishWarningRemainingTokens", c.FinishWarningRemainingTokens, "workerContextMaxTokens", c.WorkerContextMaxTokens)
	v.below("compaction.overviewDeadlineTokens", c.OverviewDeadlineTokens, "workerContextMaxTokens", c.WorkerContextMaxTokens)
	v.atMost("compaction.summaryTargetTokens", c.SummaryTargetTokens, "summaryMaxTokens", c.SummaryMaxTokens)
	v.below("compaction.summaryMaxTokens", c.SummaryMaxTokens, "resultContextMaxTokens", c.ResultContextMaxTokens)
}

func (v *validator) atMost(key string, n int, otherKey string, other int) {
	if n > other {
		v.add(key, "must be <= %s (%d), got %d", otherKey, other, n)
	}
}

func (v *validator) below(key string, n int, otherKey string, other int) {
	if n >= other {
		v.add(key, "must be < %s (%d), got %d", otherKey, other, n)
	}
}

func (v *validator) branchSummary(b *BranchSummary) {
	v.positive("branchSummary.reserveTokens", b.ReserveTokens)
	v.positive("branchSummary.contextWindow", b.ContextWindow)
	if b.ReserveTokens > 0 && b.ContextWindow > 0 && b.ReserveTokens >= b.ContextWindow {
		v.add("branchSummary.reserveTokens", "must be less than branchSummary.contextWindow (%d), got %d", b.ContextWindow, b.ReserveTokens)
	}
}

func (v *validator) pruning(p *Pruning) {
	v.nonNegative("pruning.protectTokens", p.ProtectTokens)
	v.nonNegative("pruning.minimumSavings", p.MinimumSavings)
	v.nonNegative("pruning.thinking", p.Thinking)
	seen := map[string]bool{}
	for i, name := range p.ProtectedTools {
		key := fmt.Sprintf("pruning.protectedTools[%d]", i)
		switch {
		case strings.TrimSpace(name) == "":
			v.add(key, "must not be empty")
		case seen[name]:
			v.add(key, "duplicate %q", name)
		}
		seen[name] = true
	}
}

func (v *validator) retry(r *Retry) {
	v.nonNegative("retry.maxRetries", r.MaxRetries)
	v.positive("retry.baseDelayMs", r.BaseDelayMs)
	if r.MaxBackoff <= 0 {
		v.add("retry.maxBackoff", "must be > 0, got %s", formatDuration(r.MaxBackoff))
	}
}

// exploreModel: the explore strategy needs a model that calls tools. The
// built-in summarizer and a remote endpoint cannot, and Pith never falls
// back to the ordinary strategy behind the user's back.
func (v *validator) exploreModel(c *Config) {
	if c.Compaction.Strategy != StrategyExplore {
		return
	}
	p := c.Summarizer.Provider
	if (p == "" || p == ProviderBuiltin) && c.Compaction.RemoteEndpoint.URL != "" {
		p = ProviderRemote
	}
	switch p {
	case ProviderOpenAI, ProviderAnthropic:
		return
	case "", ProviderBuiltin:
		p = ProviderBuiltin
	}
	v.add("compaction.strategy", "explore needs a tool-calling model, but the summarizer is %s: set summarizer.provider to openai or anthropic and summarizer.model", p)
}

func (v *validator) summarizer(s *Summarizer, remote *RemoteEndpoint) {
	v.model("summarizer", s.Provider, s.Model, s.BaseURL, s.APIKeyEnv, remote)
	v.nonNegative("summarizer.maxOutputTokens", s.MaxOutputTokens)
	v.nonNegative("summarizer.contextWindow", s.ContextWindow)
	for i, c := range s.Candidates {
		v.model(fmt.Sprintf("summarizer.candidates[%d]", i), c.Provider, c.Model, c.BaseURL, c.APIKeyEnv, remote)
	}
}

// model checks one summarizer model reference, the primary or a candidate.
func (v *validator) model(prefix, provider, model, baseURL, apiKeyEnv string, remote *RemoteEndpoint) {
	v.oneOf(prefix+".provider", provider, providers)
	switch provider {
	case ProviderOpenAI, ProviderAnthropic:
		if strings.TrimSpace(model) == "" {
			v.add(prefix+".model", "must be set for provider %s", provider)
		}
	case ProviderRemote:
		if remote.URL == "" {
			v.add(prefix+".provider", "remote needs compaction.remoteEndpoint.url")
		}
	}
	v.httpURL(prefix+".baseUrl", baseURL)
	v.envName(prefix+".apiKeyEnv", apiKeyEnv)
}

func (v *validator) plugins(ps []Plugin) {
	first := map[string]int{}
	for i, p := range ps {
		key := func(k string) string { return fmt.Sprintf("plugins[%d].%s", i, k) }
		v.uniqueName(key("name"), p.Name, "plugins", i, first)
		if p.Reattach != "" {
			if _, err := reattach.Parse(p.Reattach); err != nil {
				v.add(key("reattach"), "%v", err)
			}
		} else {
			v.executable(key("path"), p.Path)
		}
		if p.SHA256 != "" && !isSHA256(p.SHA256) {
			v.add(key("sha256"), "must be 64 hex digits, got %d characters", len(p.SHA256))
		}
		if p.Timeout <= 0 {
			v.add(key("timeout"), "must be > 0, got %s", formatDuration(p.Timeout))
		}
		v.oneOf(key("failure"), p.Failure, failures)
		for name := range p.Env {
			if !envNamePattern().MatchString(name) {
				v.add(key("env"), "%q is not an environment variable name", name)
			}
		}
		seenEvent := map[string]bool{}
		for _, e := range p.Events {
			switch {
			case !hooks.EventID(e).Valid():
				v.add(key("events"), "unknown event %q (one of %s)", e, eventNames())
			case seenEvent[e]:
				v.add(key("events"), "%q is listed twice", e)
			}
			seenEvent[e] = true
		}
		v.pluginBoundary(key, p)
	}
}

// eventNames lists the hook events for a message.
func eventNames() string {
	var names []string
	for _, e := range hooks.AllEvents() {
		names = append(names, string(e))
	}
	return strings.Join(names, ", ")
}

// pluginBoundary checks the inheritEnv list and the limits of one plugin.
func (v *validator) pluginBoundary(key func(string) string, p Plugin) {
	for _, name := range p.InheritEnv {
		if !envNamePattern().MatchString(name) {
			v.add(key("inheritEnv"), "%q is not an environment variable name", name)
		}
	}
	l := p.Limits
	for _, f := range []struct {
		name string
		val  int
	}{
		{"contextBytes", l.ContextBytes}, {"promptBytes", l.PromptBytes}, {"summaryBytes", l.SummaryBytes},
		{"preserveDataBytes", l.PreserveDataBytes}, {"detailsBytes", l.DetailsBytes}, {"jsonDepth", l.JSONDepth},
		{"pathEntriesBytes", l.PathEntriesBytes}, {"messagesBytes", l.MessagesBytes}, {"completePromptBytes", l.CompletePromptBytes},
		{"completeMaxTokens", l.CompleteMaxTokens}, {"estimateBytes", l.EstimateBytes},
		{"completeCalls", l.CompleteCalls}, {"hostCallsInFlight", l.HostCallsInFlight},
		{"stderrLinesPerSecond", l.StderrLinesPerSecond}, {"stderrBytesPerSecond", l.StderrBytesPerSecond},
		{"stderrLineBytes", l.StderrLineBytes},
	} {
		if f.val <= 0 {
			v.add(key("limits."+f.name), "must be > 0, got %d", f.val)
		}
	}
}

func (v *validator) executable(key, path string) {
	if strings.TrimSpace(path) == "" {
		v.add(key, "must be set")
		return
	}
	info, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		v.add(key, "%s: no such file", path)
	case err != nil:
		v.add(key, "%s: %v", path, errors.Unwrap(err))
	case !info.Mode().IsRegular():
		v.add(key, "%s: not a regular file", path)
	case runtime.GOOS != "windows" && info.Mode().Perm()&0o111 == 0:
		v.add(key, "%s: not executable", path)
	}
}

func (v *validator) server(s *Server) {
	v.address("server.listen", s.Listen, false)
	v.address("server.metrics", s.Metrics, true)
	v.address("server.viewer", s.Viewer, true)
	if s.ShutdownTimeout <= 0 {
		v.add("server.shutdownTimeout", "must be > 0, got %s", formatDuration(s.ShutdownTimeout))
	}
	if s.IdleTimeout <= 0 {
		v.add("server.idleTimeout", "must be > 0, got %s", formatDuration(s.IdleTimeout))
	}
	v.positive("server.maxOpenSessions", s.MaxOpenSessions)
	v.positive("server.maxOpenSessionsPerCaller", s.MaxOpenSessionsPerCaller)
	v.positive("server.viewerMaxSessions", s.ViewerMaxSessions)
	v.positive("server.viewerMaxBytes", s.ViewerMaxBytes)
	if s.ViewerLoginIdle <= 0 {
		v.add("server.viewerLoginIdle", "must be > 0, got %s", formatDuration(s.ViewerLoginIdle))
	}
	if s.ViewerLoginMaxAge <= 0 {
		v.add("server.viewerLoginMaxAge", "must be > 0, got %s", formatDuration(s.ViewerLoginMaxAge))
	}
	v.positive("server.maxAppendBytes", s.MaxAppendBytes)
	v.positive("server.maxSessionBytes", s.MaxSessionBytes)
	v.positive("server.maxStreams", s.MaxStreams)
	v.positive("server.maxCallsInFlight", s.MaxCallsInFlight)
	v.nonNegative("server.maxConnections", s.MaxConnections)
	v.nonNegative("server.maxConnectionsPerAddress", s.MaxConnectionsPerAddress)
	switch s.Reflection {
	case ReflectionAuto, ReflectionOn, ReflectionOff:
	default:
		v.add("server.reflection", "must be %q, %q or %q, got %q", ReflectionAuto, ReflectionOn, ReflectionOff, s.Reflection)
	}
	if s.MaxConnections > 0 && s.MaxConnectionsPerAddress > s.MaxConnections {
		v.add("server.maxConnectionsPerAddress", "must be <= server.maxConnections (%d), got %d", s.MaxConnections, s.MaxConnectionsPerAddress)
	}
	if s.HandshakeTimeout <= 0 {
		v.add("server.handshakeTimeout", "must be > 0, got %s", formatDuration(s.HandshakeTimeout))
	}
	if (s.TLS.CertFile == "") != (s.TLS.KeyFile == "") {
		v.add("server.tls", "certFile and keyFile go together")
	}
	if s.TLS.ClientCAFile != "" && !s.TLS.Enabled() {
		v.add("server.tls.clientCAFile", "needs server.tls.certFile and server.tls.keyFile")
	}
	first := map[string]int{}
	// sums finds one token listed twice: the first entry would win, so
	// the other's name and prefix would be silently ignored — or, the
	// entries reordered, a tenant's token would reach another prefix.
	sums := map[string]int{}
	for i, t := range s.Tokens {
		key := func(k string) string { return fmt.Sprintf("server.tokens[%d].%s", i, k) }
		v.uniqueName(key("name"), t.Name, "server.tokens", i, first)
		// The value is not echoed: it may be the token itself, pasted by
		// mistake.
		if !isSHA256(t.SHA256) {
			v.add(key("sha256"), "must be the 64 hex digits of the token's SHA-256 (`pith serve hash-token`), never the token itself")
		} else if j, dup := sums[strings.ToLower(t.SHA256)]; dup {
			v.add(key("sha256"), "the same token as server.tokens[%d] (%q): one token must have one entry, one name and one prefix", j, s.Tokens[j].Name)
		} else {
			sums[strings.ToLower(t.SHA256)] = i
		}
		if t.Prefix != "" && !SafePrefix(t.Prefix) {
			v.add(key("prefix"), `must be "" or directories of [A-Za-z0-9._-] not starting with '.', ending in "/", got %q`, t.Prefix)
		}
	}
	for _, a := range []struct{ key, addr string }{{"server.listen", s.Listen}, {"server.metrics", s.Metrics}, {"server.viewer", s.Viewer}} {
		if p := s.ExposureProblem(a.addr); p != "" {
			v.add(a.key, "%s", p)
		}
	}
}

// address checks host:port, or unix:/path for a local socket.
func (v *validator) workspace(w *Workspace) {
	for i, r := range w.Roots {
		if strings.TrimSpace(r) == "" {
			v.add(fmt.Sprintf("workspace.roots[%d]", i), "must not be empty")
		}
	}
	for i, p := range w.Deny {
		if err := workspace.CheckDenyPattern(p); err != nil {
			v.add(fmt.Sprintf("workspace.deny[%d]", i), "%v", err)
		}
	}
}

func (v *validator) address(key, addr string, optional bool) {
	if addr == "" {
		if !optional {
			v.add(key, "must be set")
		}
		return
	}
	if path, ok := strings.CutPrefix(addr, "unix:"); ok {
		if path == "" {
			v.add(key, "unix: needs a socket path")
		}
		return
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		v.add(key, "must be host:port or unix:/path, got %q", addr)
		return
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		v.add(key, "bad port %q", port)
	}
}

// uniqueName checks the name of element i of the list at path (plugins,
// server.tokens): set, of the name grammar, and not used by an earlier
// element, which first records.
func (v *validator) uniqueName(key, name, path string, i int, first map[string]int) {
	switch {
	case name == "":
		v.add(key, "must be set")
	case !pluginNamePattern().MatchString(name):
		v.add(key, "must be letters, digits, '.', '_' or '-', got %q", name)
	default:
		if j, dup := first[name]; dup {
			v.add(key, "duplicate %q (also %s[%d])", name, path, j)
		} else {
			first[name] = i
		}
	}
}

// isSHA256 is checksum.Parse's rule for an expected sum, so a value
// accepted here is never refused when the plugin starts or a token is
// matched.
func isSHA256(s string) bool {
	_, err := checksum.Parse(s)
	return err == nil
}
