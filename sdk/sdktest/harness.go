package sdktest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/pith-dev/pith/hooks"
	"github.com/pith-dev/pith/internal/dispatch"
	"github.com/pith-dev/pith/internal/pluginhost"
	"github.com/pith-dev/pith/sdk"
)

// Option configures a Harness.
type Option func(*options)

type options struct {
	info       hooks.PluginInfo
	host       hooks.HostAPI
	args       []string
	env        map[string]string
	inheritEnv []string
	sha256     string
	sup        SupervisorOptions
}

// WithInfo sets the plugin's name, priority, order, timeout, failure policy
// and limits, as the host's configuration would.
func WithInfo(info hooks.PluginInfo) Option { return func(o *options) { o.info = info } }

// WithHost replaces the default FakeHost.
func WithHost(h hooks.HostAPI) Option { return func(o *options) { o.host = h } }

// WithArgs sets a subprocess's command-line arguments.
func WithArgs(args ...string) Option { return func(o *options) { o.args = args } }

// WithEnv adds environment variables to a subprocess.
func WithEnv(env map[string]string) Option { return func(o *options) { o.env = env } }

// WithInheritEnv passes the named variables of the test's environment on
// to a subprocess, as the configuration's inheritEnv does; the host gives a
// plugin a minimal environment and withholds the rest.
func WithInheritEnv(names ...string) Option { return func(o *options) { o.inheritEnv = names } }

// WithSHA256 makes the host check a subprocess's binary against the hex
// sha256 checksum before starting it, as the configuration's sha256 does;
// a mismatch fails the start.
func WithSHA256(sum string) Option { return func(o *options) { o.sha256 = sum } }

// WithSupervisorOptions sets how the host supervises a subprocess
// (start timeout, health checks, restart backoff, crash budget); the zero
// fields keep the host's defaults.
func WithSupervisorOptions(so SupervisorOptions) Option { return func(o *options) { o.sup = so } }

// Harness drives one plugin in a test.
type Harness struct {
	// Plugin is the plugin as the Dispatcher sees it.
	Plugin hooks.Plugin
	// Dispatcher holds just this plugin, for checking how the host would
	// combine and validate its results.
	Dispatcher *Dispatcher
	// Host is the HostAPI offered to the plugin (a *FakeHost by default).
	Host hooks.HostAPI
	// Process is the supervised plugin process of a Subprocess harness;
	// nil in process.
	Process *Process
}

func build(t testing.TB, opts []Option) options {
	o := options{info: hooks.PluginInfo{Name: "plugin-under-test", Timeout: 10 * time.Second}}
	for _, f := range opts {
		f(&o)
	}
	if o.info.Name == "" {
		o.info.Name = "plugin-under-test"
	}
	if o.host == nil {
		o.host = &FakeHost{}
	}
	return o
}

func (h *Harness) dispatcher(t testing.TB, log hclog.Logger) {
	d, err := dispatch.NewDispatcher(dispatch.Options{Logger: log, Host: h.Host}, h.Plugin)
	if err != nil {
		t.Fatalf("sdktest: %v", err)
	}
	h.Dispatcher = &Dispatcher{d: d}
}

// InProcess serves the handler value p in the test process and connects to
// it over a real gRPC connection, as the host connects to a subprocess: the
// same server, protobuf conversion, panic guard, deadlines, status codes
// and message size limits. The plugin is stopped when the test ends.
func InProcess(t testing.TB, p any, opts ...Option) *Harness {
	t.Helper()
	o := build(t, opts)
	ip, err := sdk.StartInProcess(o.info, p)
	if err != nil {
		t.Fatalf("sdktest: %v", err)
	}
	t.Cleanup(func() { _ = ip.Close() })
	h := &Harness{Plugin: ip, Host: o.host}
	h.dispatcher(t, testLogger(t))
	return h
}

// Subprocess starts the plugin binary through the host's supervisor and
// stops it when the test ends.
func Subprocess(t testing.TB, binary string, opts ...Option) *Harness {
	t.Helper()
	o := build(t, opts)
	spec := pluginhost.Spec{
		Name: o.info.Name, Path: binary, Args: o.args, Env: o.env, InheritEnv: o.inheritEnv, SHA256: o.sha256,
		Priority: o.info.Priority, Order: o.info.Order, Timeout: o.info.Timeout, Failure: o.info.Failure, Limits: o.info.Limits,
	}
	log := testLogger(t)
	sup := pluginhost.NewSupervisor(spec, o.sup.host(o.host, log))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := sup.Start(ctx); err != nil {
		t.Fatalf("sdktest: %v", err)
	}
	t.Cleanup(func() { sup.Stop(context.Background()) })
	h := &Harness{Plugin: sup, Host: o.host, Process: &Process{sup: sup}}
	h.dispatcher(t, log)
	return h
}

// FakeHost returns the harness's FakeHost, or nil when WithHost replaced it.
func (h *Harness) FakeHost() *FakeHost {
	f, _ := h.Host.(*FakeHost)
	return f
}

func (h *Harness) ctx(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx = hooks.WithHost(ctx, h.Host)
	return context.WithTimeout(ctx, h.timeout())
}

func (h *Harness) timeout() time.Duration {
	if t := h.Plugin.Info().Timeout; t > 0 {
		return t
	}
	return dispatch.DefaultTimeout
}

// send makes one call with the harness's host API and the plugin's
// timeout, as the Dispatcher would.
func send[R any](h *Harness, ctx context.Context, call func(context.Context) (R, error)) (R, error) {
	ctx, cancel := h.ctx(ctx)
	defer cancel()
	return call(ctx)
}

// notify is send for a notification, which has no result.
func notify(h *Harness, ctx context.Context, call func(context.Context) error) error {
	_, err := send(h, ctx, func(ctx context.Context) (struct{}, error) { return struct{}{}, call(ctx) })
	return err
}

// BeforeCompact sends session_before_compact and returns the plugin's own
// answer (use Dispatcher to see the combined, validated outcome).
func (h *Harness) BeforeCompact(ctx context.Context, ev *hooks.BeforeCompactEvent) (*hooks.BeforeCompactResult, error) {
	return send(h, ctx, func(ctx context.Context) (*hooks.BeforeCompactResult, error) { return h.Plugin.BeforeCompact(ctx, ev) })
}

// Compacting sends session.compacting.
func (h *Harness) Compacting(ctx context.Context, ev *hooks.CompactingEvent) (*hooks.CompactingResult, error) {
	return send(h, ctx, func(ctx context.Context) (*hooks.CompactingResult, error) { return h.Plugin.Compacting(ctx, ev) })
}

// Compact sends the session_compact notification.
func (h *Harness) Compact(ctx context.Context, ev *hooks.CompactEvent) error {
	return notify(h, ctx, func(ctx context.Context) error { return h.Plugin.Compact(ctx, ev) })
}

// BeforeTree sends session_before_tree.
func (h *Harness) BeforeTree(ctx context.Context, ev *hooks.BeforeTreeEvent) (*hooks.BeforeTreeResult, error) {
	return send(h, ctx, func(ctx context.Context) (*hooks.BeforeTreeResult, error) { return h.Plugin.BeforeTree(ctx, ev) })
}

// Tree sends the session_tree notification.
func (h *Harness) Tree(ctx context.Context, ev *hooks.TreeEvent) error {
	return notify(h, ctx, func(ctx context.Context) error { return h.Plugin.Tree(ctx, ev) })
}

// Build compiles the main package at pkg (a path or import path, as for go
// build) into a temporary directory and returns the binary's path.
func Build(t testing.TB, pkg string) string {
	t.Helper()
	bin, err := BuildTo(t.TempDir(), pkg)
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// BuildTo compiles the main package at pkg into dir; for TestMain, which
// builds once per test binary run and has no testing.TB.
func BuildTo(dir, pkg string) (string, error) {
	name := filepath.Base(strings.TrimSuffix(pkg, "/"))
	if name == "." || name == "" {
		name = "plugin"
	}
	bin := filepath.Join(dir, name)
	cmd := exec.Command("go", "build", "-o", bin, pkg)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", &buildError{pkg: pkg, err: err, out: out.String()}
	}
	return bin, nil
}

type buildError struct {
	pkg string
	err error
	out string
}

func (e *buildError) Error() string {
	return "sdktest: go build " + e.pkg + ": " + e.err.Error() + "\n" + e.out
}

// testLogger logs through t.Log until the test ends; later lines (from
// goroutines winding down) go nowhere instead of panicking.
func testLogger(t testing.TB) hclog.Logger {
	w := &tWriter{t: t}
	t.Cleanup(w.close)
	level := hclog.Info
	if os.Getenv("PITH_TEST_LOG") != "" {
		level = hclog.Trace
	}
	return hclog.New(&hclog.LoggerOptions{Output: w, Level: level, DisableTime: true})
}

type tWriter struct {
	mu   sync.Mutex
	t    testing.TB
	done bool
}

func (w *tWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

func (w *tWriter) close() {
	w.mu.Lock()
	w.done = true
	w.mu.Unlock()
}
