package server

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/pith-dev/pith/config"
	"github.com/pith-dev/pith/core/engine"
	"github.com/pith-dev/pith/core/summary"
	"github.com/pith-dev/pith/hooks"
	sessionv1 "github.com/pith-dev/pith/internal/gen/pith/session/v1"
	"github.com/pith-dev/pith/internal/pluginhost"
	"github.com/pith-dev/pith/store"
	"github.com/pith-dev/pith/store/served"
	"github.com/pith-dev/pith/viewer"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"
)

// Sentinel errors of the registry.
var (
	// ErrNoSession: no open session has that id.
	ErrNoSession = errors.New("no open session with that id")
	// ErrShuttingDown refuses calls once Close has begun (the session
	// source's, which refuses with it too).
	ErrShuttingDown = served.ErrShuttingDown
	// ErrRestartNeeded refuses a reload changing what only a restart can
	// change (config.CheckReload, which the watcher asks before every
	// reload: sessions.root and .store, server.workspaceRoot, the
	// authentication in force).
	ErrRestartNeeded = config.ErrRestartNeeded
)

// Options configure a Server. Config and the three builders are required;
// the builders are how the command line's wiring (cmd/host) is reused
// without this package importing it.
type Options struct {
	// Config is the configuration in force at start.
	Config *config.Config
	Logger hclog.Logger
	// Summarizer builds the summarizer a configuration asks for.
	Summarizer func(*config.Config) (summary.Summarizer, error)
	// Settings derives the engine settings of a configuration.
	Settings func(*config.Config) engine.Settings
	// PluginSpecs derives the plugin specs of a configuration.
	PluginSpecs func(*config.Config) []pluginhost.Spec
	// HostVersion is sent to plugins.
	HostVersion string
	// Plugins tunes the plugin supervisors (start timeout, backoff…);
	// Logger and Host are set by the Server.
	Plugins pluginhost.Options
	// RequireAuth refuses anonymous calls even when no token is
	// configured: set for a listener other machines can reach, so that a
	// reload removing every token fails closed.
	RequireAuth bool
	// ClientCerts demands a verified client certificate on every call
	// (the listener's TLS has server.tls.clientCAFile).
	ClientCerts bool
	// Store, when set, is where sessions live (sessions.store: a database
	// several hosts share) instead of the files under sessions.root. The
	// caller opens and closes it.
	Store store.Store
}

// Server is the SessionService: a registry of open sessions over the
// configured plugins and summarizer. Create it with New, register it on a
// gRPC server with Register, and Close it.
type Server struct {
	opts    Options
	log     hclog.Logger
	cfg     atomic.Pointer[config.Config]
	summ    *swapSummarizer
	hostAPI *engine.HostAPI
	plugins *pluginhost.Host
	// pluginSet is the list every Dispatcher gets; guarded by mu.
	pluginSet []hooks.Plugin
	metrics   *metrics
	health    *health.Server
	// recvLimit is the transport's receive limit, set by GRPCOptions.
	recvLimit int
	// lastRuns is each session's last compaction run (LastRun).
	lastRuns lastRuns
	// reload is the configuration generation and last reload (the
	// viewer's daemon panel).
	reloadMu sync.Mutex
	reload   reloadRecord
	// viewer is the running Viewer's sessions, or nil.
	viewer atomic.Pointer[viewer.Sessions]
	// slots counts each caller's open event streams and calls in flight.
	slots callerSlots
	// applied is closed, and replaced, when a configuration is applied:
	// open streams check their caller again then (revalidate).
	applied atomic.Pointer[chan struct{}]

	mu       sync.Mutex // guards the fields below and pluginSet
	sessions map[string]*openSession
	// keyed finds an open session by its source's key, so two names of
	// one session share it.
	keyed map[any]*openSession
	// evicted remembers where sessions closed for idleness or the count
	// limit live, so that a call naming one reopens it transparently.
	evicted map[string][]string
	// src is where sessions live; files is it when it is the files
	// under sessions.root (the viewer reads those), else nil.
	src   served.Source
	files *served.Files
	// relay carries engine events to and from the other hosts of a
	// shared store; nil for the files.
	relay    *eventRelay
	closed   bool
	shutdown chan struct{}
	janitor  chan struct{} // closed when the idle janitor has stopped
}

// New builds the summarizer and starts the configured plugins; a plugin
// that does not start is logged and left out, except one whose binary
// does not match its sha256: New fails with that error (whatever the
// plugin's failure policy). Close releases everything.
func New(ctx context.Context, opts Options) (*Server, error) {
	if opts.Config == nil || opts.Summarizer == nil || opts.Settings == nil || opts.PluginSpecs == nil {
		return nil, errors.New("server: Config, Summarizer, Settings and PluginSpecs are required")
	}

	log := opts.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	s := &Server{
		opts:     opts,
		log:      log,
		metrics:  newMetrics(),
		health:   health.NewServer(),
		sessions: map[string]*openSession{},
		keyed:    map[any]*openSession{},
		evicted:  map[string][]string{},
		shutdown: make(chan struct{}),
		janitor:  make(chan struct{}),
	}
	s.cfg.Store(opts.Config)
	first := make(chan struct{})
	s.applied.Store(&first)
	if opts.Store != nil {
		holder := served.NewHolder()
		// The relay first: the source's watch hands it what hosts publish.
		relay := newEventRelay(opts.Store, holder, log, s.deliver)
		src, err := served.NewStored(opts.Store, served.StoredOptions{
			Holder:    holder,
			LeaseTTL:  opts.Config.Sessions.LeaseTTL,
			Logger:    log,
			Bound:     s.sessionBound,
			Changed:   s.storeChanged,
			Published: relay.received,
		})
		if err != nil {
			relay.close()
			return nil, err
		}
		s.src, s.relay = src, relay
	} else {
		s.files = served.NewFiles(func() string { return s.cfg.Load().Sessions.Root }, func() bool { return hasTenants(s.cfg.Load()) }, s.sessionBound, log)
		s.src = s.files
	}
	sum, err := opts.Summarizer(opts.Config)
	if err != nil {
		return nil, fmt.Errorf("summarizer: %w", err)
	}
	s.summ = &swapSummarizer{}
	s.summ.set(sum)
	s.hostAPI = &engine.HostAPI{Lookup: s.lookupStore, Summarizer: s.summ, Logger: log.Named("plugin")}

	popts := opts.Plugins
	popts.Logger = log.Named("plugin")
	observe := popts.Observe
	popts.Observe = func(o pluginhost.Observation) {
		s.metrics.observePlugin(o)
		if observe != nil {
			observe(o)
		}
	}
	popts.Host = s.hostAPI
	if popts.HostVersion == "" {
		popts.HostVersion = opts.HostVersion
	}
	s.plugins = pluginhost.NewHost(popts)
	if specs := opts.PluginSpecs(opts.Config); len(specs) > 0 {
		plugins, retire, err := s.plugins.Apply(ctx, specs)
		if retire != nil {
			retire(ctx)
		}
		if mismatch := pluginhost.Mismatch(err); mismatch != nil {
			// A binary the configuration does not trust is not a plugin
			// failing: whatever its failure policy, the daemon does not
			// start without it (nor with it).
			s.plugins.StopAll(ctx)
			if cerr := s.closeSource(); cerr != nil {
				log.Warn("closing the session source", "error", cerr)
			}
			return nil, mismatch
		}
		if err != nil {
			// Each failure was logged, in one line, as it happened.
			log.Debug("some plugins did not start", "error", err)
		}
		s.pluginSet = plugins
	}
	go s.closeIdle()
	s.health.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	s.health.SetServingStatus(sessionv1.SessionService_ServiceDesc.ServiceName, healthpb.HealthCheckResponse_SERVING)
	return s, nil
}

// Register puts the SessionService and the gRPC health service on g, and
// server reflection when withReflection (server.reflection, for the
// listener's address).
func (s *Server) Register(g *grpc.Server, withReflection bool) {
	sessionv1.RegisterSessionServiceServer(g, &service{s: s})
	healthpb.RegisterHealthServer(g, s.health)
	if withReflection {
		reflection.Register(g)
	}
}

// MetricsHandler serves the Prometheus metrics.
func (s *Server) MetricsHandler() http.Handler { return s.metrics.handler() }

// Config is the configuration in force.
func (s *Server) Config() *config.Config { return s.cfg.Load() }

// PrepareReload is the watcher's OnReload: it builds the new summarizer and
// reconciles the plugins with the new configuration. A plugin that fails to
// start rejects the configuration and the previous plugin set is put back.
// What only a restart may change (config.CheckReload) the watcher has
// refused before calling it.
func (s *Server) PrepareReload(ctx context.Context, old, next *config.Config) error {
	sum, err := s.opts.Summarizer(next)
	if err != nil {
		return fmt.Errorf("summarizer: %w", err)
	}
	if !config.DiffPlugins(old, next).Empty() {
		plugins, retire, err := s.plugins.Apply(ctx, s.opts.PluginSpecs(next))
		if err != nil {
			// Put the old set back: what the failed Apply replaced is still
			// running (not retired) and the Dispatchers still use it.
			back, retireBack, berr := s.plugins.Apply(ctx, s.opts.PluginSpecs(old))
			if berr != nil {
				s.log.Error("could not restore every plugin of the configuration in force", "error", berr)
			}
			s.setPlugins(back)
			if retire != nil {
				retire(ctx)
			}
			if retireBack != nil {
				retireBack(ctx)
			}
			if mismatch := pluginhost.Mismatch(err); mismatch != nil {
				err = mismatch // the one line that says which binary and both sums
			}
			return fmt.Errorf("plugins: %w", err)
		}
		s.setPlugins(plugins)
		retire(ctx)
	}
	s.summ.set(sum)
	return nil
}

// ApplyConfig is the config Store's subscriber: it puts the new settings
// into every open session. Operations already running finish on the
// settings they started with.
func (s *Server) ApplyConfig(ch config.Change) {
	s.cfg.Store(ch.New)
	next := make(chan struct{})
	close(*s.applied.Swap(&next))
	// The listeners and the transport are built once, at start.
	for _, k := range []string{"server.listen", "server.metrics", "server.tls", "sessions.leaseTTL",
		"server.maxConnections", "server.maxConnectionsPerAddress", "server.handshakeTimeout"} {
		if ch.Has(k) {
			s.log.Warn("this change takes effect at the next start of pith serve", "key", k)
		}
	}
	if s.recvLimit > 0 && ch.New.Server.MaxAppendBytes > s.recvLimit-recvSlack {
		s.log.Warn("server.maxAppendBytes above its value at start takes full effect at the next start (the transport's message limit)",
			"limit", s.recvLimit-recvSlack)
	}
	st := s.opts.Settings(ch.New)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, o := range s.sessions {
		o.engine().SetSettings(st)
	}
}

// ObserveReload is the watcher's Observe (metrics).
func (s *Server) ObserveReload(r config.Result) {
	s.metrics.observeReload(r)
	s.recordReload(r)
}

func (s *Server) setPlugins(plugins []hooks.Plugin) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pluginSet = plugins
	for _, o := range s.sessions {
		if err := o.disp.SetPlugins(plugins); err != nil {
			s.log.Error("plugin set refused", "session", o.id, "error", err)
		}
	}
}

// Close refuses new calls, ends the event streams, waits (bounded by ctx)
// for the running operations, stops every plugin and closes the files.
func (s *Server) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.shutdown)
	sessions := make([]*openSession, 0, len(s.sessions))
	for _, o := range s.sessions {
		sessions = append(sessions, o)
	}
	s.mu.Unlock()
	s.health.Shutdown()

	var errs []error
	for _, o := range sessions {
		held := false
		select {
		case o.op <- struct{}{}:
			held = true
		default:
			held = o.acquire(ctx) == nil
		}
		if !held {
			// Still running past the deadline: abort it and close anyway;
			// the store's lock makes the close wait for a write in progress.
			o.engine().AbortCompaction()
			s.log.Warn("operation still running at shutdown; aborted", "session", o.id)
		}
		if err := o.closeFiles(); err != nil {
			errs = append(errs, err)
		}
		if held {
			o.release()
		}
		s.metrics.openSessions.Dec()
	}
	stopCtx := ctx
	if ctx.Err() != nil {
		// Give the plugins their own short grace: a shutdown past its
		// deadline must still not leave processes behind.
		var cancel context.CancelFunc
		stopCtx, cancel = context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
	}
	s.plugins.StopAll(stopCtx)
	<-s.janitor
	if err := s.closeSource(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// swapSummarizer forwards to the summarizer of the configuration in force,
// so engines created before a reload use the new one.
type swapSummarizer struct {
	cur atomic.Pointer[summary.Summarizer]
}

func (w *swapSummarizer) set(s summary.Summarizer) { w.cur.Store(&s) }

func (w *swapSummarizer) Summarize(ctx context.Context, req summary.Request) (summary.Result, error) {
	return (*w.cur.Load()).Summarize(ctx, req)
}

// Converse forwards a tool conversation (the explore strategy) to the
// summarizer in force, when it can call tools.
func (w *swapSummarizer) Converse(ctx context.Context, req summary.ConverseRequest) (summary.ConverseResult, error) {
	tc, err := summary.AsToolCaller(*w.cur.Load())
	if err != nil {
		return summary.ConverseResult{}, err
	}
	return tc.Converse(ctx, req)
}

// CallsTools implements summary.ToolCallChecker.
func (w *swapSummarizer) CallsTools() bool {
	_, err := summary.AsToolCaller(*w.cur.Load())
	return err == nil
}

// maxMessage is the gRPC send limit, as on the hooks wire: a context with
// large tool outputs easily passes 4 MiB.
const maxMessage = 256 << 20

// recvSlack is what a request carries beside the bytes it appends.
const recvSlack = 1 << 20

// maxHeaderBytes bounds a call's headers (its metadata). They are read
// whole before authentication, by anyone who can connect: gRPC's default
// (16 MiB) let every anonymous call make the daemon hold that much. A
// bearer token and gRPC's own headers take well under 1 KiB.
const maxHeaderBytes = 64 << 10

// connIdle closes a connection no call has used for that long (a client
// dials again when it needs one): without it connections opened and left
// — by anyone who can connect, before any credential is asked — piled up
// without bound. A connection with a stream open is not idle. A variable
// for the tests.
var connIdle = 5 * time.Minute

// connPing is how long a connection may stay silent before the daemon
// pings its client (gRPC's default: two hours), closing it when no
// answer comes within connPingTimeout. A connection with answers waiting
// for its client holds their slots until it ends, and one whose client
// vanished without a word — its window shut, so nothing is in flight for
// TCP to give up on — would otherwise keep them that long. Variables for
// the tests.
var connPing, connPingTimeout = 2 * time.Minute, 20 * time.Second

// streamsPerConn bounds the streams one connection has open at once: a
// stream lasts on the daemon until its answer and trailers have been
// written — all of its data read by the client — and gRPC's default is
// no bound, so a client opening streams and reading nothing made the
// daemon keep any number of them (each with its goroutine, its state
// and its queued answer). Past the bound a new stream is refused
// (REFUSED_STREAM; gRPC clients wait for one to end instead). One caller
// can use no more at once than its calls in flight and its event
// streams, so that is the bound, read at start (a reload changing them
// does not change it; a client past it on one connection waits).
func streamsPerConn(cfg config.Server) uint32 {
	n := uint64(max(cfg.MaxCallsInFlight, 0)) + uint64(max(cfg.MaxStreams, 0))
	return uint32(min(n, math.MaxUint32))
}

// GRPCOptions are the options a gRPC server for the SessionService needs:
// the message limits, and interceptors that turn a panic in a call into an
// Internal error (logged with its stack) instead of killing the daemon and
// every session in it.
func (s *Server) GRPCOptions() []grpc.ServerOption {
	// A request is never bigger than the largest append plus its
	// envelope: gRPC buffers a whole message before any check runs, so a
	// larger receive limit would let clients make the daemon hold that
	// much per call.
	cfg := s.cfg.Load().Server
	s.recvLimit = max(cfg.MaxAppendBytes, 4<<20) + recvSlack
	handshake := cfg.HandshakeTimeout
	if handshake <= 0 {
		// A configuration built by hand rather than loaded (validation
		// refuses 0): 0 would give every connection no time at all.
		handshake = config.DefaultHandshakeTimeout
	}
	return []grpc.ServerOption{
		grpc.MaxRecvMsgSize(s.recvLimit), grpc.MaxSendMsgSize(maxMessage),
		grpc.MaxHeaderListSize(maxHeaderBytes),
		grpc.MaxConcurrentStreams(streamsPerConn(cfg)),
		// A call's answer holds its slot until it has left (its
		// buffers counted by the codec, or its connection ended);
		// GetContext's refers to the session's messages rather than
		// holding a copy of them.
		answerCodecOption(), s.GRPCCreds(insecure.NewCredentials()),
		// Credentials and the caller's slot are checked as a call's
		// headers arrive, before its request is read (auth.go).
		grpc.InTapHandle(s.tapAuth),
		grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionIdle: connIdle, Time: connPing, Timeout: connPingTimeout}),
		// A connection has server.handshakeTimeout for its TLS handshake
		// and HTTP/2 preface (gRPC's default: two minutes); idle ones
		// that never said a word held descriptors that long.
		grpc.ConnectionTimeout(handshake),
		// Authentication runs inside the panic guard, before any handler.
		grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (resp any, err error) {
			defer s.recoverCall(info.FullMethod, &err)
			resp, err = h(ctx, req)
			s.metrics.observeError(info.FullMethod, err)
			return resp, s.scrubPaths(err)
		}, s.unaryAuth),
		grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) (err error) {
			defer s.recoverCall(info.FullMethod, &err)
			err = h(srv, ss)
			s.metrics.observeError(info.FullMethod, err)
			return s.scrubPaths(err)
		}, s.streamAuth),
	}
}

// GRPCCreds is the option setting the gRPC server's transport
// credentials (GRPCOptions sets insecure ones; put this after them for
// TLS): each connection is followed, so that its end gives back the
// slots of the answers still waiting on it (trackConns). A server given
// credentials with grpc.Creds instead cannot follow its connections, and
// gives a call's slot back when its handler returns, before its answer
// was sent.
func (s *Server) GRPCCreds(c credentials.TransportCredentials) grpc.ServerOption {
	return grpc.Creds(trackConns{c})
}

// scrubPaths keeps the server's file system layout out of what a client
// reads: an error naming sessions.root by its absolute path names it by
// the path relative to it instead. Errors are worded relative to the root
// already; this is the net under every one of them.
func (s *Server) scrubPaths(err error) error {
	if err == nil {
		return nil
	}
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	msg := st.Message()
	root := filepath.Clean(s.cfg.Load().Sessions.Root)
	roots := []string{root}
	if real, rerr := filepath.EvalSymlinks(root); rerr == nil && real != root {
		roots = append(roots, real)
	}
	changed := false
	for _, r := range roots {
		if strings.Contains(msg, r) {
			msg = strings.ReplaceAll(msg, r+string(filepath.Separator), "")
			msg = strings.ReplaceAll(msg, r, "sessions.root")
			changed = true
		}
	}
	if !changed {
		return err
	}
	return status.Error(st.Code(), msg)
}

func (s *Server) recoverCall(method string, err *error) {
	if r := recover(); r != nil {
		s.log.Error("panic in a call", "method", method, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		*err = status.Errorf(codes.Internal, "%s: internal error: %v", method, r)
	}
}
