package sdk

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/hashicorp/go-hclog"
	"github.com/pith-dev/pith/hooks"
	"github.com/pith-dev/pith/internal/gcstart"
	"github.com/pith-dev/pith/internal/plugintls"
	"github.com/pith-dev/pith/internal/reattach"
	"github.com/pith-dev/pith/internal/wire"
)

// Option configures ServePlugin and Serve.
type Option func(*config)

type config struct {
	name    string
	version string
	debug   bool
}

// WithName sets the name the plugin reports in Describe; default the
// executable's base name. The host logs and namespaces by its configured
// name either way.
func WithName(name string) Option { return func(c *config) { c.name = name } }

// WithVersion sets the version the plugin reports in Describe.
func WithVersion(v string) Option { return func(c *config) { c.version = v } }

// WithDebug serves in debug mode, as does PITH_PLUGIN_DEBUG=1 in the
// environment: the plugin is started by hand (under a debugger, say), needs
// no handshake cookie, serves without TLS on a unix socket, prints one line
// "PITH_PLUGIN_REATTACH=<json>" on stdout — go-plugin's reattach
// configuration: {"Protocol","ProtocolVersion","Pid","Test","Addr":
// {"Network","String"}} — and serves until a client attached with that
// configuration shuts it down, or SIGINT. Pith attaches to it when that
// line is the plugin's `reattach` configuration key (see the README,
// "Running a plugin under a debugger"); any go-plugin client can
// (plugin.ClientConfig.Reattach), which is how sdk's TestDebugMode drives it.
func WithDebug() Option { return func(c *config) { c.debug = true } }

// EnvDebug names the environment variable that turns debug mode on.
const EnvDebug = "PITH_PLUGIN_DEBUG"

// EnvReattach prefixes the line a plugin in debug mode prints.
const EnvReattach = reattach.EnvPrefix

// Handler is a plugin's handler value. It is any value that implements at
// least one of BeforeCompactHandler, CompactingHandler, CompactHandler,
// BeforeTreeHandler and TreeHandler (or Funcs, or hooks.EventLister). Go
// cannot say "one or more of five interfaces" in a type, so Serve checks it
// when it starts and names what it looked for when nothing matches;
// ServeOpts, whose fields are the interfaces, says it in types instead.
type Handler any

// Errors ServePlugin and Serve return.
var (
	// ErrNoEvents: the handler implements none of the handler interfaces.
	ErrNoEvents = errors.New("sdk: the plugin handles no event")
	// ErrNotLaunchedByHost is what a plugin run by hand, not by Pith (nor
	// in debug mode), says on stderr before it exits with status 1, as a
	// go-plugin plugin does: Serve does not return then.
	ErrNotLaunchedByHost = errors.New("this binary is a Pith plugin: list it under plugins: in Pith's configuration and Pith starts it")
)

// startingHeap is what a plugin allocates before its first collection.
const startingHeap = 16 << 20

// Serve runs h as a plugin until the host stops it or dies, then returns
// nil. h implements one or more handler interfaces; only those events are
// reported to the host and sent by it. Serve refuses, with an error that
// names the method sets it looked at, a handler that handles no event.
// Run by hand, outside Pith and not in debug mode, it says so on stderr
// (ErrNotLaunchedByHost) and exits with status 1, as go-plugin's Serve
// does; so does a plugin the host started that cannot serve (no protocol
// version in common, no socket), after a log line that says why. Call it
// from main:
//
//	if err := sdk.Serve(h, sdk.WithName("guard")); err != nil {
//		fmt.Fprintln(os.Stderr, err)
//		os.Exit(1)
//	}
//
// The error is also written to stderr — as a log line for the host when
// Pith started the plugin, as plain text when it was run by hand — so a
// main that ignores it still shows why the plugin did not start.
//
// A plugin started by the host collects garbage for the first time once it
// holds 16 MB (then with the usual pacing), so that its start and first
// calls, when a command waits for them, are not slowed by collections of a
// heap of a few MB; GOGC or GOMEMLIMIT in the plugin's environment (env:
// in its configuration) leave the collector as they say.
//
// Deprecated: use ServePlugin, the typed form: its ServeOpts fields are the
// handler interfaces, so a handler with a wrong method signature is a
// compile error rather than a refusal at start-up. Serve stays for the
// plugins written against it and serves exactly as ServePlugin does.
func Serve(h Handler, opts ...Option) error { return serve(h, opts) }

// serve is Serve and ServePlugin: it checks h, then serves it as the host
// asked (debug mode, TLS) until the host is done with it.
func serve(h Handler, opts []Option) error {
	cfg := config{name: filepath.Base(os.Args[0]), version: "0.0.0", debug: os.Getenv(EnvDebug) == "1"}
	for _, o := range opts {
		o(&cfg)
	}
	log := Logger()
	byHost := os.Getenv(wire.Handshake.MagicCookieKey) == wire.Handshake.MagicCookieValue
	if err := CheckHandler(h); err != nil {
		reportStartError(log, byHost, err)
		return err
	}
	srv := newServer(handlerOf(h), cfg)
	if cfg.debug {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
		defer stop()
		return serveDebug(ctx, srv, os.Stdout)
	}
	if !byHost {
		reportStartError(log, false, ErrNotLaunchedByHost)
		exitRunByHand()
		return ErrNotLaunchedByHost // when exitRunByHand is a test's
	}
	gcstart.Defer(startingHeap)
	if err := serveHost(srv, log); err != nil {
		// go-plugin's Serve exits here, and plugins written for it
		// ignore the error: without the exit such a plugin would end
		// with status 0 and the host would be told nothing was wrong.
		log.Error(err.Error())
		exitStartFailed()
		return err
	}
	return nil
}

// serveHost serves srv to the host that started the process, as
// go-plugin's Serve would: the version the host offers, TLS when the host
// passed its certificate, a socket in the directory it made, the handshake
// line on stdout. It returns once the host has stopped the server.
func serveHost(srv *server, log hclog.Logger) error {
	version, err := negotiate(os.Getenv(wire.EnvProtocolVersions))
	if err != nil {
		return err
	}
	id, tlsCfg, err := serveTLS(os.Getenv(plugintls.EnvClientCert))
	if err != nil {
		return err
	}
	srv.tls = tlsCfg
	l, err := listen(os.Getenv(wire.EnvUnixSocketDir))
	if err != nil {
		return fmt.Errorf("sdk: listen: %w", err)
	}
	gs := newGRPCServer(srv, tlsCfg)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	onTerminate(log)
	ignoreInterrupts()
	go watchParent(ctx, func() { hostGone(log, "host process is gone") })
	if err := announce(os.Stdout, handshakeLine(version, l.Addr(), id)); err != nil {
		_ = l.Close()
		return err
	}
	// After the handshake line nobody reads the plugin's stdout (go-plugin
	// reads and drops it): what the plugin's code prints there goes to
	// stderr instead, which the host logs.
	os.Stdout = os.Stderr
	return gs.serve(l)
}

// ignoreInterrupts keeps SIGINT from ending the plugin: a Ctrl-C at the
// terminal reaches the host's whole process group, and it is the host that
// decides when its plugins stop (go-plugin's Serve does the same). A
// handler rather than signal.Ignore, whose SIG_IGN the plugin's own child
// processes would inherit across exec.
func ignoreInterrupts() {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt)
	go func() {
		for range ch {
		}
	}()
}

// serveDebug serves srv without TLS on a socket of its own and prints the
// reattach configuration on out; it returns once a client has stopped the
// server (go-plugin's controller) or ctx has ended.
func serveDebug(ctx context.Context, srv *server, out io.Writer) error {
	l, err := listen("")
	if err != nil {
		return fmt.Errorf("sdk: debug mode: listen: %w", err)
	}
	line, err := reattach.Config{
		Protocol: "grpc", ProtocolVersion: wire.ProtocolVersion, Pid: os.Getpid(), Test: true,
		Addr: reattach.Addr{Network: l.Addr().Network(), String: l.Addr().String()},
	}.Line()
	if err == nil {
		_, err = fmt.Fprintln(out, line)
	}
	if err != nil {
		_ = l.Close()
		return err
	}
	gs := newGRPCServer(srv, nil)
	stop := context.AfterFunc(ctx, gs.stop)
	defer stop()
	return gs.serve(l)
}

// CheckHandler reports whether h handles at least one event, as Serve
// would check it. The error names the method sets it looked at, and says so
// when the methods are declared on the pointer type but h is a value. h
// may be a ServeOpts, which must set a handler.
func CheckHandler(h Handler) error {
	if o, ok := h.(ServeOpts); ok {
		return checkServeOpts(o)
	}
	if h == nil {
		return fmt.Errorf("%w: the handler is nil", ErrNoEvents)
	}
	if len(hooks.DetectEvents(h)) > 0 {
		return nil
	}
	t := reflect.TypeOf(h)
	if t.Kind() != reflect.Pointer && len(hooks.DetectEvents(reflect.New(t).Interface())) > 0 {
		return fmt.Errorf("%w: the handler methods are declared on *%v (pointer receiver) but Serve got a %v value; pass &%v{…} or declare them on %v",
			ErrNoEvents, t, t, t, t)
	}
	var wrong []string
	for _, m := range handlerMethods {
		if got, ok := t.MethodByName(m.name); ok {
			wrong = append(wrong, fmt.Sprintf("%s has type %v, want %s", m.name, got.Type, m.want))
		}
	}
	msg := fmt.Sprintf("%%w: the method set of %v has none of %s", t, methodList())
	if len(wrong) > 0 {
		msg += " with the right signature (" + strings.Join(wrong, "; ") + ")"
	}
	return fmt.Errorf(msg, ErrNoEvents)
}

var handlerMethods = []struct{ name, want string }{
	{"BeforeCompact", "func(context.Context, *sdk.BeforeCompactEvent) (*sdk.BeforeCompactResult, error)"},
	{"Compacting", "func(context.Context, *sdk.CompactingEvent) (*sdk.CompactingResult, error)"},
	{"Compact", "func(context.Context, *sdk.CompactEvent) error"},
	{"BeforeTree", "func(context.Context, *sdk.BeforeTreeEvent) (*sdk.BeforeTreeResult, error)"},
	{"Tree", "func(context.Context, *sdk.TreeEvent) error"},
}

func methodList() string {
	names := make([]string, len(handlerMethods))
	for i, m := range handlerMethods {
		names[i] = m.name
	}
	return strings.Join(names, ", ")
}

// Events reports the events p (a handler value or a ServeOpts) handles,
// as Serve and ServePlugin would describe them.
func Events(p any) []hooks.EventID { return hooks.DetectEvents(handlerOf(p)) }
