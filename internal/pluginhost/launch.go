package pluginhost

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"github.com/hashicorp/go-plugin/runner"
	"github.com/pith-dev/pith/hooks"
	"github.com/pith-dev/pith/internal/dispatch"
	pb "github.com/pith-dev/pith/internal/gen/pith/hooks/v1"
	"github.com/pith-dev/pith/internal/plugintls"
	"github.com/pith-dev/pith/internal/proctree"
	"github.com/pith-dev/pith/internal/wire"
)

// ErrNoCertificate: the plugin's handshake line carried no TLS certificate,
// so the host has nothing to verify the plugin with; it is not used.
var ErrNoCertificate = errors.New("the plugin's handshake line carries no TLS certificate (sixth field); Pith requires mutual TLS")

// launch starts one instance — a new process, or for an attached plugin a
// connection to the running one — and asks it to Describe itself.
func (s *Supervisor) launch(ctx context.Context) (*instance, error) {
	var (
		inst   *instance
		r      *remote
		tlsCfg *tls.Config // nil for an attached plugin: no TLS
		err    error
	)
	if s.spec.Reattach != "" {
		inst, r, err = s.attach()
	} else {
		inst, r, tlsCfg, err = s.startProcess()
	}
	if err != nil {
		return nil, err
	}
	if err := s.describe(ctx, inst, r, tlsCfg); err != nil {
		killInstance(inst)
		return nil, fmt.Errorf("start plugin %q (%s): describe: %w", s.spec.Name, s.spec.where(), err)
	}
	return inst, nil
}

// startProcess checks the binary, makes this process's TLS identity, starts
// the process and runs go-plugin's handshake. The TLS configuration it
// returns has the plugin's certificate pinned; the host API is served with
// it.
func (s *Supervisor) startProcess() (*instance, *remote, *tls.Config, error) {
	spec := s.spec
	bin, err := s.binary()
	if err != nil {
		return nil, nil, nil, err
	}
	defer bin.close() // the process has its own reference once started
	id, err := hostIdentity()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("start plugin %q: %w", spec.Name, err)
	}
	tlsCfg := id.ClientConfig()
	cmd := spec.command(bin.path, id.PEM())
	cmd.Env = append(cmd.Env, s.pluginLogLevel()...)
	logs := newInstanceLogs(s.log, dispatch.LimitsOrDefaults(spec.Limits))
	inst := &instance{done: make(chan struct{}), logs: logs.writers(), relay: logs.relay, said: logs.said, cmd: cmd}
	inst.client = plugin.NewClient(s.processClientConfig(cmd, tlsCfg, logs, inst))
	client := inst.client
	// Verification is done by then (the pinned root); this only keeps
	// the certificate the plugin showed, for status and tests.
	tlsCfg.VerifyConnection = func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) > 0 {
			inst.peerCert.Store(cs.PeerCertificates[0])
		}
		return nil
	}
	r, err := handshake(client, tlsCfg)
	if cmd.Process != nil {
		inst.pid = cmd.Process.Pid
	}
	if err != nil {
		killInstance(inst) // waits for its output: what it said is in by then
		serr := &StartError{Name: spec.Name, Exit: exitedBy(cmd), Said: logs.said.String(), Err: err}
		s.log.Debug("plugin did not start", "command", commandLine(cmd.Args), "pid", inst.pid,
			"exit", serr.Exit, "handshake", wantedHandshake, "error", err)
		return nil, nil, nil, serr
	}
	inst.rpc = r.rpc
	return inst, r, tlsCfg, nil
}

// command is the plugin's process, executing path (the configured path or
// the checked open file, see openBinary) under the configured name: its
// own process group, so that stopping it ends what it started, and a
// parent-death signal, so that a SIGKILLed host takes it along; the
// minimal environment plus the host's certificate (PEM), set last so that
// no configured env can replace it. Its standard input is /dev/null
// (processRunner).
func (s Spec) command(path string, hostCertPEM []byte) *exec.Cmd {
	cmd := exec.Command(path, s.Args...)
	cmd.Args[0] = s.Path
	cmd.SysProcAttr = proctree.SysProcAttr()
	cmd.Env = append(s.environment(os.LookupEnv), plugintls.EnvClientCert+"="+string(hostCertPEM))
	return cmd
}

// wantedHandshake is what the host waits for, for the debug log of a start
// that failed (docs/protocol.md has the details).
var wantedHandshake = fmt.Sprintf("started with %s=%s, the plugin prints first on stdout the line CORE|%d|unix|SOCKET|grpc|CERTIFICATE",
	wire.Handshake.MagicCookieKey, wire.Handshake.MagicCookieValue, wire.ProtocolVersion)

// commandLine is args as one line: each argument that is not a plain word
// Go-quoted.
func commandLine(args []string) string {
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = a
		if a == "" || strings.ContainsFunc(a, func(r rune) bool { return r <= ' ' || r == '"' || r == '\\' || r == 0x7f }) {
			quoted[i] = strconv.Quote(a)
		}
	}
	return strings.Join(quoted, " ")
}

// exitedBy is how cmd's process ended by itself, once go-plugin has reaped
// it: "" while it runs or when it was killed (by the host, which ends a
// plugin whose handshake failed).
func exitedBy(cmd *exec.Cmd) string {
	ps := cmd.ProcessState
	if ps == nil {
		return ""
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
		return ""
	}
	return ps.String()
}

// envPluginLogLevel is the SDK's EnvLogLevel: the level of the log lines a
// Go plugin sends (info by default).
const envPluginLogLevel = "PITH_PLUGIN_LOG_LEVEL"

// pluginLogLevel asks the plugin for its debug lines when the host logs
// them (--verbose): a panic's stack among them. Its configured env wins.
func (s *Supervisor) pluginLogLevel() []string {
	if _, set := s.spec.Env[envPluginLogLevel]; set {
		return nil
	}
	switch {
	case s.log.IsTrace():
		return []string{envPluginLogLevel + "=trace"}
	case s.log.IsDebug():
		return []string{envPluginLogLevel + "=debug"}
	}
	return nil
}

// instanceLogs are the sinks of one instance's output: stderr (hclog JSON
// or text) and go-plugin's stdio stream, all under one rate limit, which
// the plugin's Log host calls share. said keeps the last stderr lines, for
// the report of a failure.
type instanceLogs struct {
	relay                    *relayLimit
	said                     *lastWords
	stderr, syncErr, syncOut *logWriter
}

func newInstanceLogs(log hclog.Logger, lim hooks.Limits) instanceLogs {
	relay := newRelayLimit(lim.StderrLinesPerSecond, lim.StderrBytesPerSecond)
	said := &lastWords{}
	return instanceLogs{
		relay:   relay,
		said:    said,
		stderr:  newLimitedLogWriter(log, lim.StderrLineBytes, relay, said),
		syncErr: newLimitedLogWriter(log, lim.StderrLineBytes, relay, said),
		syncOut: newLimitedLogWriter(log.With("stream", "stdout"), lim.StderrLineBytes, relay, nil),
	}
}

func (l instanceLogs) writers() []*logWriter { return []*logWriter{l.stderr, l.syncErr, l.syncOut} }

// goPluginHandshake is the handshake (cookie, protocol version) as
// go-plugin's client takes it.
var goPluginHandshake = plugin.HandshakeConfig(wire.Handshake)

// processClientConfig is go-plugin's configuration for starting cmd. TLS is
// Pith's own (tlsCfg, internal/plugintls) rather than go-plugin's AutoMTLS,
// whose P-521 keys cost most of a plugin's start; the scheme is the same.
//
// go-plugin makes a private directory (mode 0700) for the plugin's sockets
// when it starts the process; its path is stored in inst.socketDir.
func (s *Supervisor) processClientConfig(cmd *exec.Cmd, tlsCfg *tls.Config, logs instanceLogs, inst *instance) *plugin.ClientConfig {
	return &plugin.ClientConfig{
		HandshakeConfig:  goPluginHandshake,
		VersionedPlugins: map[int]plugin.PluginSet{wire.ProtocolVersion: {wire.PluginName: &hostPlugin{}}},
		// go-plugin's own runner would give the plugin the host's stdin;
		// it passes its handshake variables on the placeholder command.
		RunnerFunc: func(_ hclog.Logger, placeholder *exec.Cmd, dir string) (runner.Runner, error) {
			inst.socketDir = dir
			r, err := newProcessRunner(cmd, placeholder.Env, dir, s.log)
			if err != nil {
				return nil, err
			}
			inst.runner.Store(r)
			return r, nil
		},
		UnixSocketConfig: &plugin.UnixSocketConfig{TempDir: socketTempDir()},
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		TLSConfig:        tlsCfg,
		StartTimeout:     s.opts.StartTimeout,
		// go-plugin's own logger is off: its stderr parser panics on a
		// non-string @message. Pith parses the stream itself (logWriter).
		Logger:          hclog.New(&hclog.LoggerOptions{Output: io.Discard, Level: hclog.Off}),
		Stderr:          logs.stderr,
		SyncStderr:      logs.syncErr,
		SyncStdout:      logs.syncOut,
		GRPCDialOptions: wire.DialOptions(),
		// A minimal environment, set by command: never the host's own.
		SkipHostEnv: true,
	}
}

// handshake starts the client's process, reads its handshake line and
// dispenses the Hooks client. go-plugin puts the certificate of the line in
// tlsCfg as the only root; a line without one is refused here rather than
// left to fail verification against the system's roots.
func handshake(client *plugin.Client, tlsCfg *tls.Config) (*remote, error) {
	if _, err := client.Start(); err != nil {
		return nil, err
	}
	if tlsCfg != nil && !plugintls.Pinned(tlsCfg) {
		return nil, ErrNoCertificate
	}
	proto, err := client.Client()
	if err != nil {
		return nil, err
	}
	raw, err := proto.Dispense(wire.PluginName)
	if err != nil {
		return nil, err
	}
	r, ok := raw.(*remote)
	if !ok {
		return nil, fmt.Errorf("unexpected plugin client %T", raw)
	}
	return r, nil
}

// describe serves the host API to the instance and asks the plugin what it
// is and handles. The plugin gets the host API's listener both as a broker
// id and as an address (see hostAPIEndpoint): it connects when it first
// calls the host, so a plugin that never does costs no connection.
func (s *Supervisor) describe(ctx context.Context, inst *instance, r *remote, tlsCfg *tls.Config) error {
	dctx, cancel := context.WithTimeout(ctx, s.opts.StartTimeout)
	defer cancel()
	brokerID := r.broker.NextId()
	api := &hostAPIServer{host: s.opts.Host, grants: &s.grants, log: s.log, relay: inst.relay, limits: dispatch.LimitsOrDefaults(s.spec.Limits)}
	ep, err := serveHostAPI(dctx, r.broker, brokerID, tlsCfg, api, &s.noBroker, inst.socketDir)
	if err != nil {
		return err
	}
	inst.hostAPI.Store(ep) // stopped when the instance is killed
	req := &pb.DescribeRequest{HostApiBrokerId: brokerID, HostApiAddress: ep.address, ConfiguredName: s.spec.Name, HostVersion: s.opts.HostVersion}
	if omitHostAPIAddress.Load() {
		req.HostApiAddress = ""
	}
	resp, err := r.rpc.Describe(dctx, req)
	if err != nil {
		return err
	}
	events, unknown := wire.EventsFromStrings(resp.GetEvents())
	if len(unknown) > 0 {
		s.log.Warn("plugin lists events this host does not know; ignoring them", "events", unknown)
	}
	if len(events) == 0 {
		s.log.Warn("plugin handles no event; it will never be called")
	}
	if len(s.spec.Events) > 0 && !sameEvents(s.spec.Events, events) {
		s.log.Warn("plugin handles other events than its configuration lists; a command starts it only for the listed ones, and it is called for those it handles",
			"configured", s.spec.Events, "handles", events)
	}
	s.desc.Store(&Description{Name: resp.GetName(), Version: resp.GetVersion(), Events: events})
	s.log.Debug("plugin started", "pid", inst.pid, "version", resp.GetVersion(), "events", events, "attached", inst.attached)
	return nil
}

// killInstance ends the instance's process and everything it started: the
// descendants are collected and killed while the plugin still runs (a
// child that left the group with setsid is found only through its parent,
// and one holding the plugin's stdout would keep go-plugin from reaping
// it), then go-plugin ends the plugin gracefully and the group is killed. An
// attached instance's process is not the host's: only the connection is
// closed. Its host API server stops with it.
func killInstance(inst *instance) {
	if inst.attached {
		inst.detach()
	} else {
		proctree.Kill(0, escapees(inst))
		inst.client.Kill()
		proctree.Kill(inst.pid, nil)
		proctree.EndOrphans()
	}
	inst.stopHostAPI()
	inst.flushLogs()
}

// killInstanceNow kills the instance's process group and descendants at
// once, without go-plugin's graceful close; go-plugin then only reaps the
// dead process, so that none is seen running after the host.
func killInstanceNow(inst *instance) {
	if inst.attached {
		inst.detach()
	} else {
		proctree.Kill(inst.pid, escapees(inst))
		inst.client.Kill()
		proctree.EndOrphans()
	}
	inst.stopHostAPI()
	inst.flushLogs()
}

// escapees lists the descendants of a plugin's process to end with its
// process group, found before it dies: those may have left the group.
// A subreaping host (proctree.Subreap, the pith command) needs no walk:
// whatever the plugin started is re-parented to it as its ancestors die,
// and EndOrphans ends it once the plugin is dead — a double-forked
// process no walk finds included, and one that keeps the plugin's output
// open too, since that output is cut once the plugin has exited
// (processRunner.endOutput) — when its exit is watched, which needs
// pidfds; without, a helper holding the output would hold the stop up
// (go-plugin's graceful wait, 2 s), so the walk stays. The walk reads a
// few /proc files per thread of the plugin, on the stop of every plugin
// of every command.
func escapees(inst *instance) []int {
	if r := inst.runner.Load(); r != nil && r.exitWatched.Load() && proctree.Subreaping() {
		return nil
	}
	return proctree.Descendants(inst.pid)
}

func (in *instance) flushLogs() {
	for _, w := range in.logs {
		w.Flush()
	}
}
