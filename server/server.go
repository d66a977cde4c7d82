package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/pith-dev/pith/config"
	"github.com/pith-dev/pith/core/engine"
	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/core/summarize"
	"github.com/pith-dev/pith/hooks"
	"github.com/pith-dev/pith/hooks/pluginhost"
	sessionv1 "github.com/pith-dev/pith/proto/pith/session/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// Sentinel errors of the registry.
var (
	// ErrNoSession: no open session has that id.
	ErrNoSession = errors.New("no open session with that id")
	// ErrShuttingDown refuses calls once Close has begun.
	ErrShuttingDown = errors.New("the server is shutting down")
)

// Options configure a Server. Config and the three builders are required;
// the builders are how the command line's wiring (cmd/host) is reused
// without this package importing it.
type Options struct {
	// Config is the configuration in force at start.
	Config *config.Config
	Logger hclog.Logger
	// Summarizer builds the summarizer a configuration asks for.
	Summarizer func(*config.Config) (summarize.Summarizer, error)
	// Settings derives the engine settings of a configuration.
	Settings func(*config.Config) engine.Settings
	// PluginSpecs derives the plugin specs of a configuration.
	PluginSpecs func(*config.Config) []pluginhost.Spec
	// HostVersion is sent to plugins.
	HostVersion string
	// Plugins tunes the plugin supervisors (start timeout, backoff…);
	// Logger and Host are set by the Server.
	Plugins pluginhost.Options
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

	mu       sync.Mutex // guards the fields below and pluginSet
	sessions map[string]*openSession
	byPath   map[string]*openSession
	closed   bool
	shutdown chan struct{}
}

// New builds the summarizer and starts the configured plugins; a plugin
// that does not start is logged and left out, as a reload would. Close
// releases everything.
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
		byPath:   map[string]*openSession{},
		shutdown: make(chan struct{}),
	}
	s.cfg.Store(opts.Config)
	sum, err := opts.Summarizer(opts.Config)
	if err != nil {
		return nil, fmt.Errorf("summarizer: %w", err)
	}
	s.summ = &swapSummarizer{}
	s.summ.set(sum)
	s.hostAPI = &engine.HostAPI{Lookup: s.lookupStore, Summarizer: s.summ, Logger: log.Named("plugin")}

	popts := opts.Plugins
	popts.Logger = log.Named("plugin")
	if il, ok := popts.Logger.(hclog.InterceptLogger); ok {
		il.RegisterSink(restartSink{prefix: popts.Logger.Name(), m: s.metrics})
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
		if err != nil {
			log.Warn("some plugins did not start", "error", err)
		}
		s.pluginSet = plugins
	}
	s.health.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	s.health.SetServingStatus(sessionv1.SessionService_ServiceDesc.ServiceName, healthpb.HealthCheckResponse_SERVING)
	return s, nil
}

// Register puts the SessionService and the gRPC health service on g.
func (s *Server) Register(g *grpc.Server) {
	sessionv1.RegisterSessionServiceServer(g, &service{s: s})
	healthpb.RegisterHealthServer(g, s.health)
}

// MetricsHandler serves the Prometheus metrics.
func (s *Server) MetricsHandler() http.Handler { return s.metrics.handler() }

// Config is the configuration in force.
func (s *Server) Config() *config.Config { return s.cfg.Load() }

// PrepareReload is the watcher's OnReload: it builds the new summarizer and
// reconciles the plugins with the new configuration. A plugin that fails to
// start rejects the configuration and the previous plugin set is put back.
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
	st := s.opts.Settings(ch.New)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, o := range s.sessions {
		o.engine().SetSettings(st)
	}
}

// ObserveReload is the watcher's Observe (metrics).
func (s *Server) ObserveReload(r config.Result) { s.metrics.observeReload(r) }

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

func (s *Server) lookupStore(id string) (*session.Store, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.sessions[id]
	if !ok {
		return nil, false
	}
	return o.store, true
}

func (s *Server) get(id string) (*openSession, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrShuttingDown
	}
	o, ok := s.sessions[id]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrNoSession, id)
	}
	return o, nil
}

// OpenResult describes an opened session.
type OpenResult struct {
	ID, Path string
	Created  bool
}

// Open opens the session file at rel (relative to sessions.root), creating
// it with cwd when create is set. A file already open is shared.
func (s *Server) Open(ctx context.Context, rel string, create bool, cwd string) (*openSession, bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	root := s.cfg.Load().Sessions.Root
	if create {
		if err := os.MkdirAll(root, 0o755); err != nil {
			return nil, false, fmt.Errorf("sessions.root: %w", err)
		}
	}
	path, err := resolvePath(root, rel, create)
	if err != nil {
		return nil, false, err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, false, ErrShuttingDown
	}
	o, ok := s.byPath[path]
	s.mu.Unlock()
	if ok {
		return o, false, nil
	}
	// Parse outside the registry lock: a large file takes a while, and
	// every other call looks sessions up under that lock.
	store, created, err := openStore(path, create, cwd, session.Options{Logger: s.log.Named("session")})
	if err != nil {
		return nil, false, err
	}
	if store.File().Migrated {
		store.Close()
		return nil, false, fmt.Errorf("%s: %w; run `pith migrate --in-place` on it first", rel, session.ErrOldVersion)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		store.Close()
		return nil, false, ErrShuttingDown
	}
	if o, ok := s.byPath[path]; ok {
		// Opened by a concurrent call meanwhile: share that one.
		store.Close()
		return o, false, nil
	}
	id := store.File().Header.ID
	if other, ok := s.sessions[id]; ok {
		store.Close()
		return nil, false, fmt.Errorf("%w: session %s is already open as %s", errConflict, id, other.rel)
	}
	o = &openSession{id: id, rel: filepath.Clean(rel), path: path, store: store, op: make(chan struct{}, 1), watchers: map[int]*watcher{}}
	o.disp, err = hooks.NewDispatcher(hooks.Options{
		Logger: s.log.Named("hooks"),
		Host:   s.hostAPI,
		Observe: func(ob hooks.Observation) {
			s.metrics.observeHook(ob)
			o.engine().ObserveHook(ob)
		},
	}, s.pluginSet...)
	if err != nil {
		store.Close()
		return nil, false, err
	}
	o.newEngine(s)
	s.sessions[id] = o
	s.byPath[path] = o
	s.metrics.openSessions.Inc()
	return o, created, nil
}

var errConflict = errors.New("conflict")

// openStore opens path, or with create makes it first when it is missing.
func openStore(path string, create bool, cwd string, opts session.Options) (store *session.Store, created bool, err error) {
	store, err = session.Open(path, opts)
	if !create || !errors.Is(err, os.ErrNotExist) {
		return store, false, err
	}
	store, err = session.Create(path, cwd, opts)
	if errors.Is(err, os.ErrExist) {
		// Another process created it first.
		store, err = session.Open(path, opts)
		return store, false, err
	}
	return store, err == nil, err
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
		o.closed.Store(true)
		o.unsubscribe()
		if err := o.store.Close(); err != nil {
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
	return errors.Join(errs...)
}

// swapSummarizer forwards to the summarizer of the configuration in force,
// so engines created before a reload use the new one.
type swapSummarizer struct {
	cur atomic.Pointer[summarize.Summarizer]
}

func (w *swapSummarizer) set(s summarize.Summarizer) { w.cur.Store(&s) }

func (w *swapSummarizer) Summarize(ctx context.Context, req summarize.Request) (summarize.Result, error) {
	return (*w.cur.Load()).Summarize(ctx, req)
}

// Converse forwards a tool conversation (the explore strategy) to the
// summarizer in force, when it can call tools.
func (w *swapSummarizer) Converse(ctx context.Context, req summarize.ConverseRequest) (summarize.ConverseResult, error) {
	tc, err := summarize.AsToolCaller(*w.cur.Load())
	if err != nil {
		return summarize.ConverseResult{}, err
	}
	return tc.Converse(ctx, req)
}

// CallsTools implements summarize.ToolCallChecker.
func (w *swapSummarizer) CallsTools() bool {
	_, err := summarize.AsToolCaller(*w.cur.Load())
	return err == nil
}

// maxMessage is the gRPC message limit on both sides, as on the hooks
// wire: a context with large tool outputs easily passes 4 MiB.
const maxMessage = 256 << 20

// GRPCOptions are the options a gRPC server for the SessionService needs:
// the message limits, and interceptors that turn a panic in a call into an
// Internal error (logged with its stack) instead of killing the daemon and
// every session in it.
func (s *Server) GRPCOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.MaxRecvMsgSize(maxMessage), grpc.MaxSendMsgSize(maxMessage),
		grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (resp any, err error) {
			defer s.recoverCall(info.FullMethod, &err)
			return h(ctx, req)
		}),
		grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) (err error) {
			defer s.recoverCall(info.FullMethod, &err)
			return h(srv, ss)
		}),
	}
}

func (s *Server) recoverCall(method string, err *error) {
	if r := recover(); r != nil {
		s.log.Error("panic in a call", "method", method, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		*err = status.Errorf(codes.Internal, "%s: internal error: %v", method, r)
	}
}
