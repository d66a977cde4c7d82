package config

import (
	"maps"

	"slices"
	"time"

	"github.com/pith-dev/pith/internal/dispatch"
)

// Config is the whole configuration of Pith. Keys are camelCase as in pi's
// settings.json, so a pi `compaction` block carries over unchanged.
//
// The `pith` struct tag marks fields whose values need care when displayed
// (see Mask): "url" may carry credentials in its user info or query,
// "envmap" holds values for a child process's environment, "args" holds
// command-line arguments.
type Config struct {
	Compaction    Compaction    `koanf:"compaction"`
	BranchSummary BranchSummary `koanf:"branchSummary"`
	Pruning       Pruning       `koanf:"pruning"`
	Retry         Retry         `koanf:"retry"`
	Summarizer    Summarizer    `koanf:"summarizer"`
	// ContextWindow is the session model's context window in tokens, used by
	// the threshold test of docs/behaviour.md §3.
	ContextWindow int      `koanf:"contextWindow"`
	Plugins       []Plugin `koanf:"plugins"`
	Sessions      Sessions `koanf:"sessions"`
	Server        Server   `koanf:"server"`
	// Workspace bounds the files read from a session's workspace on a
	// model's behalf (rehydrate, the explore worker's file tools).
	Workspace Workspace `koanf:"workspace"`
	Logging   Logging   `koanf:"logging"`
}

// Calibration methods (docs/behaviour.md §5.3).
const (
	// CalibrationDelta: the growth of measured prompt tokens between two
	// assistant usages over the estimate of the messages between them, so
	// the fixed overhead (system prompt, tool schemas) cancels.
	CalibrationDelta = "delta"
	// CalibrationTotal: the last measured prompt over the estimate of the
	// whole range (the original formula; overstates with a large overhead).
	CalibrationTotal = "total"
)

// Compaction strategies (docs/behaviour.md §7, §12).
const (
	StrategySummary = "summary"
	StrategyExplore = "explore"
)

// Compaction configures docs/behaviour.md §3–§9 and the exploring worker budgets of §12.
type Compaction struct {
	Enabled          bool `koanf:"enabled"`
	ReserveTokens    int  `koanf:"reserveTokens"`
	KeepRecentTokens int  `koanf:"keepRecentTokens"`
	// AutoContinue injects "Continue if you have next steps." after a
	// threshold compaction (docs/behaviour.md §9.3).
	AutoContinue bool `koanf:"autoContinue"`
	// CalibrateKeepRecent scales keepRecentTokens by the measured
	// prompt/estimate ratio (docs/behaviour.md §5.3).
	CalibrateKeepRecent bool `koanf:"calibrateKeepRecent"`
	// CalibrationMethod is how the ratio is measured: CalibrationDelta
	// (default) or CalibrationTotal.
	CalibrationMethod string `koanf:"calibrationMethod"`
	// ShortSummary asks for a 2–3 sentence summary for a UI besides the
	// full one, stored as the entry's shortSummary (docs/behaviour.md §7).
	ShortSummary bool `koanf:"shortSummary"`
	// HonourPiCut: a compaction proposed for pi (pith propose, docs/pi.md)
	// keeps from pi's firstKeptEntryId instead of the cut Pith's own
	// preparation finds (the default: its calibration is better).
	HonourPiCut    bool           `koanf:"honourPiCut"`
	RemoteEndpoint RemoteEndpoint `koanf:"remoteEndpoint"`
	Strategy       string         `koanf:"strategy"`

	// Budgets of the exploring compact worker (docs/behaviour.md §12), all in tokens
	// except WorkerMaxTurns.
	RetainedTokens               int `koanf:"retainedTokens"`
	OverviewTargetTokens         int `koanf:"overviewTargetTokens"`
	OverviewWarningTokens        int `koanf:"overviewWarningTokens"`
	OverviewDeadlineTokens       int `koanf:"overviewDeadlineTokens"`
	WorkerContextMaxTokens       int `koanf:"workerContextMaxTokens"`
	FinishWarningRemainingTokens int `koanf:"finishWarningRemainingTokens"`
	FinalReserveTokens           int `koanf:"finalReserveTokens"`
	WorkerMaxTurns               int `koanf:"workerMaxTurns"`
	SummaryTargetTokens          int `koanf:"summaryTargetTokens"`
	SummaryMaxTokens             int `koanf:"summaryMaxTokens"`
	AutoReadBudgetTokens         int `koanf:"autoReadBudgetTokens"`
	ResultContextMaxTokens       int `koanf:"resultContextMaxTokens"`
	// Model is the explorer's model; empty means the summarizer's model.
	Model string `koanf:"model"`
	// Rehydrate re-reads recently used files into the context after a
	// compaction; off (files 0) by default.
	Rehydrate Rehydrate `koanf:"rehydrate"`
}

// Rehydrate configures re-reading, after a compaction, the files most
// recently read or changed in the summarized part, from the session's
// workspace (its header's cwd), as one custom_message.
type Rehydrate struct {
	// Files is how many of the most recent files come back; 0 is off.
	Files int `koanf:"files"`
	// MaxTokensPerFile: a larger file comes back as its path only.
	MaxTokensPerFile int `koanf:"maxTokensPerFile"`
	// TotalTokens bounds all contents together.
	TotalTokens int `koanf:"totalTokens"`
}

// RemoteEndpoint is the remote summarizer of docs/behaviour.md §7. It is in use when URL
// is set.
type RemoteEndpoint struct {
	URL     string        `koanf:"url" pith:"url"`
	Timeout time.Duration `koanf:"timeout"`
	// AuthHeader names the HTTP header that carries the credential.
	AuthHeader string `koanf:"authHeader"`
	// AuthEnv names the environment variable holding the credential; the
	// credential itself never appears in the configuration.
	AuthEnv string `koanf:"authEnv"`
	// Retries bounds the retries on transient errors (0: one attempt).
	Retries int `koanf:"retries"`
}

// BranchSummary configures summaries of abandoned branches (docs/behaviour.md §11).
type BranchSummary struct {
	Enabled       bool `koanf:"enabled"`
	ReserveTokens int  `koanf:"reserveTokens"`
	// ContextWindow is the window the branch-summary budget is computed
	// from (tokenBudget = contextWindow − reserveTokens) when the session's
	// model is not known; when it is, the model's window is (the top-level
	// contextWindow, or the window pi gives), as pi computes it.
	ContextWindow int `koanf:"contextWindow"`
	// SkipPrompt is pi's setting of the same name, accepted so that a pi
	// branchSummary block carries over: do not ask whether to summarize.
	SkipPrompt bool `koanf:"skipPrompt"`
}

// Pruning configures tool-output pruning (docs/behaviour.md §8).
type Pruning struct {
	Enabled        bool     `koanf:"enabled"`
	ProtectTokens  int      `koanf:"protectTokens"`
	MinimumSavings int      `koanf:"minimumSavings"`
	ProtectedTools []string `koanf:"protectedTools"`
	// Thinking keeps the thinking blocks of the newest N assistant
	// messages and prunes older ones into the same archive; 0 is off.
	Thinking int `koanf:"thinking"`
}

// Retry configures retries of summarizer calls (docs/behaviour.md §9.5).
type Retry struct {
	Enabled     bool `koanf:"enabled"`
	MaxRetries  int  `koanf:"maxRetries"`
	BaseDelayMs int  `koanf:"baseDelayMs"`
	// MaxBackoff is how much backoff one candidate may accumulate before
	// the chain moves on to the next candidate.
	MaxBackoff time.Duration `koanf:"maxBackoff"`
}

// Summarizer providers.
const (
	ProviderBuiltin   = "builtin"
	ProviderOpenAI    = "openai"
	ProviderAnthropic = "anthropic"
	ProviderRemote    = "remote"
)

// Summarizer selects the model that writes summaries (docs/behaviour.md §7).
type Summarizer struct {
	Provider string `koanf:"provider"`
	Model    string `koanf:"model"`
	BaseURL  string `koanf:"baseUrl" pith:"url"`
	// APIKeyEnv names the environment variable holding the API key.
	APIKeyEnv string `koanf:"apiKeyEnv"`
	// MaxOutputTokens is the model's own output limit, which summary caps
	// are clamped to; 0 looks the model up in the providers' table of
	// known models (no clamp for an unknown one).
	MaxOutputTokens int `koanf:"maxOutputTokens"`
	// ContextWindow is the model's window, which the summarizer input must
	// fit; 0 means the session model's (the top-level contextWindow). See
	// Config.SummarizerContextWindow.
	ContextWindow int `koanf:"contextWindow"`
	// Candidates are further models tried in order, after the one above,
	// when it keeps failing with transient errors (docs/behaviour.md §9.5).
	Candidates []Candidate `koanf:"candidates"`
}

// Candidate is one fallback summarizer model.
type Candidate struct {
	Provider  string `koanf:"provider"`
	Model     string `koanf:"model"`
	BaseURL   string `koanf:"baseUrl" pith:"url"`
	APIKeyEnv string `koanf:"apiKeyEnv"`
}

// Plugin failure policies (docs/behaviour.md §13).
const (
	FailureOpen   = "open"
	FailureClosed = "closed"
)

// Plugin is one out-of-process plugin (docs/behaviour.md §13, §14).
type Plugin struct {
	// Name is unique and namespaces the plugin's preserveData.
	Name string `koanf:"name"`
	// Path is the executable. A relative path in a file is resolved against
	// the file's directory at load time, so Path is absolute afterwards.
	Path string `koanf:"path"`
	// Args are passed as written, except that one starting ./, ../ or ~/
	// (or a --name=value whose value does) is resolved as Path is: the
	// plugin runs in the host's working directory, not the file's.
	Args []string          `koanf:"args" pith:"args"`
	Env  map[string]string `koanf:"env" pith:"envmap"`
	// SHA256, when set, is the hex checksum the binary must match.
	SHA256 string `koanf:"sha256"`
	// Priority orders plugins; lower runs first, ties keep list order.
	Priority int           `koanf:"priority"`
	Timeout  time.Duration `koanf:"timeout"`
	Failure  string        `koanf:"failure"`
	// Events, when set, are the events the plugin handles (its Describe
	// answer, written down): a CLI command then starts the plugin only if
	// it fires one of them, saving the plugin's start-up (a process, a TLS
	// handshake, Describe) where it would never be called. The plugin's
	// own answer is checked on every start and a difference is
	// logged; the plugin is then called for the events it really handles.
	// Unset, every command starts it. `pith plugins check` and the daemon
	// start every plugin whatever this says.
	Events []string `koanf:"events"`

	// The plugin's trust boundary: what it gets of the host's environment
	// and how much it may send and be sent.

	// InheritEnv names host environment variables passed to the plugin
	// beyond PATH, HOME, TMPDIR, LANG and TZ; nothing else is.
	InheritEnv []string     `koanf:"inheritEnv"`
	Limits     PluginLimits `koanf:"limits"`

	// Reattach, when set, is the line a plugin started by hand in debug
	// mode printed (PITH_PLUGIN_REATTACH={...}, the prefix optional): the
	// host attaches to that process instead of starting path, which may
	// then be empty. For development only: sha256 cannot be checked, the
	// connection is not TLS, and the host neither restarts nor signals
	// the process. Every attach is logged as a warning.
	Reattach string `koanf:"reattach"`
}

// PluginLimits bound one plugin. A result over a limit is a failure of the
// plugin under its failure policy, logged with the limit's name. Sizes are
// in bytes. The fields are hooks.Limits's, in the same order, so that one
// converts to the other.
type PluginLimits struct {
	// ContextBytes bounds the total of a session.compacting result's
	// context lines; PromptBytes its prompt.
	ContextBytes int `koanf:"contextBytes"`
	PromptBytes  int `koanf:"promptBytes"`
	// SummaryBytes bounds a supplied compaction's or branch summary's text
	// (summary and short summary).
	SummaryBytes int `koanf:"summaryBytes"`
	// PreserveDataBytes and DetailsBytes bound those JSON values; JSONDepth
	// bounds their nesting.
	PreserveDataBytes int `koanf:"preserveDataBytes"`
	DetailsBytes      int `koanf:"detailsBytes"`
	JSONDepth         int `koanf:"jsonDepth"`
	// PathEntriesBytes bounds the raw entries sent with
	// session_before_compact (path entries and labels) and
	// session_before_tree (entries to summarize); past it the newest that
	// fit are sent with
	// the event's truncated flag, and the plugin pages the rest through
	// the host API, whose ReadEntries answers it bounds too.
	PathEntriesBytes int `koanf:"pathEntriesBytes"`
	// MessagesBytes bounds the messages sent with session_before_compact
	// (to summarize and turn prefix together); past it the newest that
	// fit are sent, marked truncated, and the plugin pages the rest.
	MessagesBytes int `koanf:"messagesBytes"`
	// CompletePromptBytes bounds a host-API completion's prompt and system
	// prompt together; CompleteMaxTokens caps its output (and is itself
	// capped by summarizer.maxOutputTokens when that is set).
	CompletePromptBytes int `koanf:"completePromptBytes"`
	CompleteMaxTokens   int `koanf:"completeMaxTokens"`
	// EstimateBytes bounds the messages of one host-API token estimate.
	EstimateBytes int `koanf:"estimateBytes"`
	// CompleteCalls bounds the host-API completions one plugin call may
	// make (each on the host's model account); HostCallsInFlight the
	// host-API calls it may have running at once. Past either, a call is
	// refused (the plugin sees RESOURCE_EXHAUSTED).
	CompleteCalls     int `koanf:"completeCalls"`
	HostCallsInFlight int `koanf:"hostCallsInFlight"`
	// The plugin's stderr is relayed to the host's log at most
	// StderrLinesPerSecond lines and StderrBytesPerSecond bytes a second,
	// each line cut at StderrLineBytes; the excess is counted and dropped.
	StderrLinesPerSecond int `koanf:"stderrLinesPerSecond"`
	StderrBytesPerSecond int `koanf:"stderrBytesPerSecond"`
	StderrLineBytes      int `koanf:"stderrLineBytes"`
}

// DefaultPluginLimits are the limits of a plugin whose entry sets none;
// the numbers live with the code that enforces them (dispatch.DefaultLimits).
func DefaultPluginLimits() PluginLimits { return PluginLimits(dispatch.DefaultLimits()) }

// Sessions configures where the daemon keeps sessions.
type Sessions struct {
	// Root is the directory of session files. A leading ~ is expanded and
	// a relative path is resolved against the file's directory at load.
	Root string `koanf:"root"`
	// Store selects where sessions live: empty (the default) for the
	// files store under Root, or a postgres:// (postgresql://) URL for a
	// PostgreSQL database several `pith serve` hosts share. The URL's
	// password is a secret: it is masked wherever the configuration is
	// shown. Read once at start: a reload that changes it is refused.
	Store string `koanf:"store" pith:"url"`
	// LeaseTTL is how long a host's lease on a shared session (held while
	// it compacts or prunes it, renewed meanwhile) outlives the host: how
	// soon another host takes over from one that died. Used with a
	// PostgreSQL Store; read at start.
	LeaseTTL time.Duration `koanf:"leaseTTL"`
}

// PostgreSQL reports whether Store selects a PostgreSQL database.
func (s Sessions) PostgreSQL() bool { return postgresURL(s.Store) }

// Server configures the `serve` daemon.
type Server struct {
	// Listen is the SessionService address: host:port, or unix:/path. An
	// address that is not loopback needs TLS and client authentication
	// (see Exposed).
	Listen string `koanf:"listen"`
	// Metrics is the Prometheus /metrics address; empty turns it off. It
	// follows the rule of Listen, and is served behind the same TLS and
	// authentication when it is not loopback.
	Metrics string `koanf:"metrics"`
	// Viewer is the address of the read-only web viewer of every session
	// under sessions.root; empty turns it off. It follows the rule of
	// Listen, and asks for the same credentials as the gRPC calls.
	Viewer string `koanf:"viewer"`
	// ViewerMaxSessions bounds the sessions the viewer keeps open at once
	// (each read whole into memory and its file followed); past it the
	// least recently used one without a live page is closed, or, when
	// every one has a live page, callers share them fairly; else a page
	// is refused with 503. Read on every open: a reload applies at once.
	ViewerMaxSessions int `koanf:"viewerMaxSessions"`
	// ViewerMaxBytes bounds the bytes of all the sessions the viewer
	// holds open together (each is read whole and kept: about 2.5 times
	// its size in memory). Past it the least recently used ones are
	// closed, as for ViewerMaxSessions; a session larger than it alone
	// is refused before it is read. Read on every reading.
	ViewerMaxBytes int `koanf:"viewerMaxBytes"`
	// ViewerLoginIdle ends a viewer sign-in no request used for that
	// long, and ViewerLoginMaxAge one that began that long ago, used or
	// not. A sign-in is an opaque id in a cookie that only this daemon's
	// memory gives a meaning to (never the token); both are asked at
	// every request, so a reload applies to the sign-ins there are.
	ViewerLoginIdle   time.Duration `koanf:"viewerLoginIdle"`
	ViewerLoginMaxAge time.Duration `koanf:"viewerLoginMaxAge"`
	ShutdownTimeout   time.Duration `koanf:"shutdownTimeout"`
	TLS               ServerTLS     `koanf:"tls"`
	// Tokens are the bearer tokens clients may present; when there is at
	// least one, every call needs one of them.
	Tokens []Token `koanf:"tokens"`
	// MaxOpenSessions bounds the sessions open at once; past it the least
	// recently used idle session is closed.
	MaxOpenSessions int `koanf:"maxOpenSessions"`
	// MaxOpenSessionsPerCaller is one caller's share of MaxOpenSessions
	// (callers counted as for MaxStreams; a session counts for the
	// caller that opened it): past it that caller's own least recently
	// used idle session is closed, or, when every one of them is in use,
	// its open is refused — never another caller's session. Keep it below
	// MaxOpenSessions, or one caller can hold every session open.
	MaxOpenSessionsPerCaller int `koanf:"maxOpenSessionsPerCaller"`
	// IdleTimeout closes a session no call has used for that long.
	IdleTimeout time.Duration `koanf:"idleTimeout"`
	// MaxAppendBytes bounds the bytes one call may add to a session (the
	// messages or entries of an Append, the message of AfterTurn).
	MaxAppendBytes int `koanf:"maxAppendBytes"`
	// MaxSessionBytes bounds a session file's size: an append that would
	// pass it is refused, and a larger file is not opened.
	MaxSessionBytes int `koanf:"maxSessionBytes"`
	// MaxStreams bounds the event streams one caller (a token's name, a
	// client certificate's subject; every anonymous caller together)
	// holds open at once: WatchEvents, and the viewer's live updates.
	// Past it a new stream is refused.
	MaxStreams int `koanf:"maxStreams"`
	// MaxCallsInFlight bounds the calls one caller (counted as for
	// MaxStreams) has in flight at once — every call but WatchEvents
	// until its answer has left the daemon (read by its client), a
	// Compact until its result, and the viewer's requests but its live
	// stream. Past it a call is refused at once (UNAVAILABLE with a retry
	// delay, 429 in the viewer), not queued: retry after it.
	// MaxCallsInFlight + MaxStreams, read at start, also bounds the
	// streams one connection has open.
	MaxCallsInFlight int `koanf:"maxCallsInFlight"`
	// MaxConnections bounds the connections each listener (the gRPC
	// address, /metrics, the viewer; pith view's too) holds at once,
	// before any credential is asked; past it a new connection is closed
	// at once. 0 (the default): derived from the descriptor limit — the
	// listeners share half of it, at most 4096 each — so that
	// connections alone never exhaust the descriptors. Read at start.
	MaxConnections int `koanf:"maxConnections"`
	// MaxConnectionsPerAddress bounds the connections one remote address
	// (an IPv4 address, an IPv6 /64) holds on each listener; a unix
	// socket's peers count only in MaxConnections. 0 (the default): a
	// quarter of MaxConnections. Read at start.
	MaxConnectionsPerAddress int `koanf:"maxConnectionsPerAddress"`
	// HandshakeTimeout is how long a new connection has to complete its
	// TLS handshake and its protocol's first words (gRPC's HTTP/2
	// preface, an HTTP request's headers) before it is dropped. Read at
	// start.
	HandshakeTimeout time.Duration `koanf:"handshakeTimeout"`
	// Reflection serves gRPC server reflection, so that grpcurl and
	// similar tools list and call the SessionService without a copy of
	// the proto: "auto" (the default) on a loopback or unix: listener
	// only, "on" on any listener, "off" never. Reflection and the health
	// check answer without a token: they tell the schema (public in the
	// repository's proto/) and SERVING, nothing of any session. Read at
	// start.
	Reflection string `koanf:"reflection"`
	// WorkspaceRoot is the directory a session's workspace must lie in
	// for the daemon to read files from it: compaction.rehydrate and the
	// explore worker's file tools read the session's workspace, the cwd
	// its header names — which a client chooses when it creates the
	// session. Empty (the default): the daemon reads no workspace file.
	// A tenant's session (under a token's prefix) reads only under the
	// directory of that name inside it (WorkspaceRootFor); any other
	// caller may have any file under it read, as the daemon's user. A
	// leading ~ is expanded, and a relative path is taken from the
	// configuration file's directory.
	WorkspaceRoot string `koanf:"workspaceRoot"`
}

// Workspace configures which workspace files may be read on a model's
// behalf — by compaction.rehydrate and the explore worker's read_file and
// mark_read_required — wherever they are read: a local run and `pith
// serve` alike.
type Workspace struct {
	// Roots are directories whose sessions' workspaces a local run
	// (`pith compact` on a session file of the user's own) reads, besides
	// the current directory and what is below it: a session names its
	// workspace in its header, and one written elsewhere (a shared
	// session, pi started in the home directory) names any directory. A
	// workspace under none of them is not read (one warning line; the
	// worker's file tools are off). --workspace adds one for a run. A
	// leading ~ is expanded, and a relative path is taken from the
	// configuration file's directory. The daemon uses
	// server.workspaceRoot instead.
	Roots []string `koanf:"roots"`
	// Deny are patterns of files never read for a model, added to the
	// built-in list (DenyDefaults). A pattern is a glob matched,
	// case-insensitively, against each name on the path of the file
	// asked for and of the file opened (links resolved), so a folder's
	// name denies all under it; "a/b" matches consecutive names.
	Deny []string `koanf:"deny"`
	// DenyDefaults applies the built-in deny list (private keys by name
	// and by their header, .ssh, .gnupg, the cloud CLIs' credential
	// folders, .env*, .netrc, .git-credentials, *.pem, *.key, …; see
	// core/workspace.DefaultDeny). False leaves only Deny — a file
	// holding a private key's header is then read too.
	DenyDefaults bool `koanf:"denyDefaults"`
}

// ServerTLS is the daemon's TLS: a server certificate, and optionally the
// CA that client certificates must chain to (mutual TLS).
type ServerTLS struct {
	CertFile     string `koanf:"certFile"`
	KeyFile      string `koanf:"keyFile"`
	ClientCAFile string `koanf:"clientCAFile"`
}

// Enabled reports whether a server certificate is configured.
func (t ServerTLS) Enabled() bool { return t.CertFile != "" || t.KeyFile != "" }

// Token is one bearer token a client may present. Only the SHA-256 of the
// token is kept (`pith serve hash-token` makes it), so the configuration
// file never holds a usable credential.
type Token struct {
	// Name identifies the holder in logs.
	Name string `koanf:"name"`
	// SHA256 is the hex SHA-256 of the token.
	SHA256 string `koanf:"sha256"`
	// Prefix is the part of sessions.root the token may touch: "" for all
	// of it, "team-a/" for the sessions under team-a only.
	Prefix string `koanf:"prefix"`
}

// Logging configures the host's hclog logger.
type Logging struct {
	Level  string `koanf:"level"`
	Format string `koanf:"format"`
}

// Reference defaults (docs/behaviour.md §12, §14).
const (
	DefaultContextWindow       = 200000
	DefaultBranchContextWindow = 128000
	DefaultPluginPriority      = 100
	DefaultPluginTimeout       = 5 * time.Second
	DefaultRemoteTimeout       = 2 * time.Minute
	DefaultRemoteRetries       = 2
	DefaultMaxBackoff          = 30 * time.Second
	DefaultShutdownTimeout     = 10 * time.Second
	DefaultListen              = "127.0.0.1:7420"
	DefaultSessionsRoot        = "~/.pith/sessions"
	DefaultLeaseTTL            = 30 * time.Second
	DefaultMaxOpenSessions     = 1024
	DefaultMaxOpenPerCaller    = 256
	DefaultViewerMaxSessions   = 64
	DefaultViewerLoginIdle     = time.Hour
	DefaultViewerMaxBytes      = 1 << 30
	DefaultViewerLoginMaxAge   = 12 * time.Hour
	DefaultIdleTimeout         = 15 * time.Minute
	DefaultMaxAppendBytes      = 16 << 20
	DefaultMaxSessionBytes     = 512 << 20
	DefaultMaxStreams          = 256
	DefaultMaxCallsInFlight    = 64
	DefaultHandshakeTimeout    = 5 * time.Second
)

// Defaults returns the reference configuration. Every call returns a fresh
// value that the caller owns.
func Defaults() *Config {
	return &Config{
		Compaction: Compaction{
			Enabled:             true,
			ReserveTokens:       16384,
			KeepRecentTokens:    20000,
			AutoContinue:        true,
			CalibrateKeepRecent: true,
			CalibrationMethod:   CalibrationDelta,
			RemoteEndpoint: RemoteEndpoint{
				Timeout:    DefaultRemoteTimeout,
				AuthHeader: "Authorization",
				Retries:    DefaultRemoteRetries,
			},
			Strategy:                     StrategySummary,
			RetainedTokens:               8000,
			OverviewTargetTokens:         8000,
			OverviewWarningTokens:        16000,
			OverviewDeadlineTokens:       40000,
			WorkerContextMaxTokens:       50000,
			FinishWarningRemainingTokens: 8000,
			FinalReserveTokens:           4000,
			WorkerMaxTurns:               20,
			SummaryTargetTokens:          2000,
			SummaryMaxTokens:             4000,
			AutoReadBudgetTokens:         8000,
			ResultContextMaxTokens:       60000,
			Rehydrate:                    Rehydrate{Files: 0, MaxTokensPerFile: 4000, TotalTokens: 12000},
		},
		BranchSummary: BranchSummary{
			Enabled:       false,
			ReserveTokens: 16384,
			ContextWindow: DefaultBranchContextWindow,
		},
		Pruning: Pruning{
			Enabled:        true,
			ProtectTokens:  40000,
			MinimumSavings: 20000,
			ProtectedTools: []string{"skill", "read"},
		},
		Retry: Retry{
			Enabled:     true,
			MaxRetries:  3,
			BaseDelayMs: 2000,
			MaxBackoff:  DefaultMaxBackoff,
		},
		Summarizer: Summarizer{
			Provider:   ProviderBuiltin,
			Candidates: []Candidate{},
		},
		ContextWindow: DefaultContextWindow,
		Plugins:       []Plugin{},
		Sessions:      Sessions{Root: DefaultSessionsRoot, LeaseTTL: DefaultLeaseTTL},
		Server: Server{
			Listen:                   DefaultListen,
			ShutdownTimeout:          DefaultShutdownTimeout,
			Tokens:                   []Token{},
			MaxOpenSessions:          DefaultMaxOpenSessions,
			MaxOpenSessionsPerCaller: DefaultMaxOpenPerCaller,
			ViewerMaxSessions:        DefaultViewerMaxSessions,
			ViewerLoginIdle:          DefaultViewerLoginIdle,
			ViewerMaxBytes:           DefaultViewerMaxBytes,
			ViewerLoginMaxAge:        DefaultViewerLoginMaxAge,
			IdleTimeout:              DefaultIdleTimeout,
			MaxAppendBytes:           DefaultMaxAppendBytes,
			MaxSessionBytes:          DefaultMaxSessionBytes,
			MaxStreams:               DefaultMaxStreams,
			MaxCallsInFlight:         DefaultMaxCallsInFlight,
			HandshakeTimeout:         DefaultHandshakeTimeout,
			Reflection:               ReflectionAuto,
		},
		Workspace: Workspace{Roots: []string{}, Deny: []string{}, DenyDefaults: true},
		Logging:   Logging{Level: "info", Format: "text"},
	}
}

// defaultPlugin is the starting value of every plugin entry, so that keys
// left out of an entry get their defaults.
func defaultPlugin() Plugin {
	return Plugin{
		Args:     []string{},
		Env:      map[string]string{},
		Priority: DefaultPluginPriority,
		Timeout:  DefaultPluginTimeout,
		Failure:  FailureOpen,
		// The trust boundary's defaults.
		InheritEnv: []string{},
		Limits:     DefaultPluginLimits(),
	}
}

// Clone returns a deep copy that the caller may modify.
func (c *Config) Clone() *Config {
	out := *c
	out.Pruning.ProtectedTools = slices.Clone(c.Pruning.ProtectedTools)
	out.Summarizer.Candidates = slices.Clone(c.Summarizer.Candidates)
	out.Plugins = slices.Clone(c.Plugins)
	out.Server.Tokens = slices.Clone(c.Server.Tokens)
	out.Workspace.Roots = slices.Clone(c.Workspace.Roots)
	out.Workspace.Deny = slices.Clone(c.Workspace.Deny)
	for i := range out.Plugins {
		out.Plugins[i].Args = slices.Clone(out.Plugins[i].Args)
		out.Plugins[i].Env = maps.Clone(out.Plugins[i].Env)
		out.Plugins[i].InheritEnv = slices.Clone(out.Plugins[i].InheritEnv)
		out.Plugins[i].Events = slices.Clone(out.Plugins[i].Events)
	}
	return &out
}

// Plugin returns the entry named name, if any.
func (c *Config) Plugin(name string) (Plugin, bool) {
	for _, p := range c.Plugins {
		if p.Name == name {
			return p, true
		}
	}
	return Plugin{}, false
}

// Chain is the ordered list of models automatic compaction tries: the
// primary summarizer, then the candidates (docs/behaviour.md §9.5).
func (s Summarizer) Chain() []Candidate {
	out := make([]Candidate, 0, 1+len(s.Candidates))
	out = append(out, Candidate{Provider: s.Provider, Model: s.Model, BaseURL: s.BaseURL, APIKeyEnv: s.APIKeyEnv})
	return append(out, s.Candidates...)
}

// SummarizerContextWindow is the summarizer model's window: its own when
// set, else the session model's.
func (c *Config) SummarizerContextWindow() int {
	if c.Summarizer.ContextWindow > 0 {
		return c.Summarizer.ContextWindow
	}
	return c.ContextWindow
}
