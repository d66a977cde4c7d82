package pluginhost

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin/runner"
	"github.com/pith-dev/pith/internal/proctree"
)

// processRunner runs a plugin's process for go-plugin (ClientConfig's
// RunnerFunc) in place of go-plugin's own runner, which hands the plugin
// the host's standard input: a plugin has no business reading what the
// user types to `pith serve` or pipes into a command. This one gives it
// /dev/null; the rest is what go-plugin's runner does.
type processRunner struct {
	cmd            *exec.Cmd
	stdout, stderr *outputPipe
	// socketDir is the directory go-plugin made for the plugin's socket;
	// go-plugin removes it when it kills a started process, and Start
	// when there is none.
	socketDir string
	log       hclog.Logger
	endOnce   sync.Once
	// exitWatched: Start watches the process's exit (proctree.OnExit),
	// which cuts its output once it has exited, whoever else holds it.
	exitWatched atomic.Bool
}

var _ runner.Runner = (*processRunner)(nil)

// newProcessRunner prepares cmd, whose environment go-plugin has not seen:
// goPluginEnv (the handshake variables go-plugin put on its placeholder
// command) is added last.
func newProcessRunner(cmd *exec.Cmd, goPluginEnv []string, socketDir string, log hclog.Logger) (*processRunner, error) {
	cmd.Env = append(cmd.Env, goPluginEnv...)
	cmd.Stdin = nil // /dev/null
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	r := &processRunner{cmd: cmd, socketDir: socketDir, log: log}
	r.stdout = &outputPipe{r: stdout, cut: r.outputCut}
	r.stderr = &outputPipe{r: stderr, cut: r.outputCut}
	return r, nil
}

func (r *processRunner) Start(context.Context) error {
	err := proctree.Start(r.cmd)
	if err != nil {
		if r.socketDir != "" {
			// No process: go-plugin's Kill skips its cleanup, and a daemon
			// retrying a broken plugin would leave one directory per try.
			os.RemoveAll(r.socketDir)
		}
		return err
	}
	// Where the exit cannot be watched, Kill ends the output instead; a
	// plugin that exits by itself while a process it started holds its
	// output is then noticed only when it is stopped.
	r.exitWatched.Store(proctree.OnExit(r.cmd.Process.Pid, r.endOutput))
	return nil
}

// outputDrainGrace is how long the output of a plugin that has exited is
// still read for a process holding it open: what the plugin wrote before
// it exited is already in the pipe, and is read in far less.
const outputDrainGrace = 250 * time.Millisecond

// endOutput bounds the reading of the plugin's stdout and stderr, once its
// process has exited or is being killed. go-plugin reads both to their end
// before it reaps the plugin (and before a stop returns), and the end comes
// only when every process holding them has closed them: a process the
// plugin started that keeps them — a daemon that does not redirect its
// output, re-parented away from the plugin where no descendants walk finds
// it — would keep the plugin unreaped, and the host's stop waiting, for as
// long as that process lives.
func (r *processRunner) endOutput() {
	r.endOnce.Do(func() {
		deadline := time.Now().Add(outputDrainGrace)
		r.stdout.endBy(deadline)
		r.stderr.endBy(deadline)
	})
}

// outputCut reports, once per plugin process, that its output was cut.
func (r *processRunner) outputCut() {
	r.log.Warn("the plugin's process has ended but another process still holds its output open; no longer reading it",
		"plugin", r.cmd.Args[0], "pid", r.ID())
}

func (r *processRunner) Wait(context.Context) error {
	err := r.cmd.Wait()
	proctree.Waited(r.cmd.Process.Pid)
	return err
}

func (r *processRunner) Kill(context.Context) error {
	if r.cmd.Process == nil {
		return nil
	}
	err := r.cmd.Process.Kill()
	if !r.exitWatched.Load() {
		// The cut counts from the exit where that is watched: a plugin
		// slow to die keeps its output until then.
		r.endOutput()
	}
	if err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return nil
}

func (r *processRunner) Stdout() io.ReadCloser { return r.stdout }
func (r *processRunner) Stderr() io.ReadCloser { return r.stderr }
func (r *processRunner) Name() string          { return r.cmd.Args[0] } // the configured path, not /proc/self/fd/N

func (r *processRunner) ID() string {
	if r.cmd.Process == nil {
		return ""
	}
	return strconv.Itoa(r.cmd.Process.Pid)
}

// Diagnose is what go-plugin adds to a failed handshake.
func (r *processRunner) Diagnose(context.Context) string {
	return fmt.Sprintf("%s may not be built for this platform, may not be executable, or is not a Pith plugin (it did not print the handshake line)", r.cmd.Args[0])
}

// The plugin runs on this machine: addresses mean the same on both sides.
func (r *processRunner) PluginToHost(network, addr string) (string, string, error) {
	return network, addr, nil
}

func (r *processRunner) HostToPlugin(network, addr string) (string, string, error) {
	return network, addr, nil
}

// outputPipe is the host's end of a plugin's stdout or stderr pipe, whose
// reading endBy can bound: past the deadline a read that would wait for
// more reports the end instead (io.EOF, so that go-plugin takes it for the
// pipe's end rather than for an error).
type outputPipe struct {
	r       io.ReadCloser
	cut     func()
	cutOnce sync.Once
}

func (p *outputPipe) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		p.cutOnce.Do(p.cut)
		return n, io.EOF
	}
	return n, err
}

func (p *outputPipe) Close() error { return p.r.Close() }

// endBy sets the deadline; a pipe without deadlines (not os.Pipe's) keeps
// being read to its end.
func (p *outputPipe) endBy(deadline time.Time) {
	if d, ok := p.r.(interface{ SetReadDeadline(time.Time) error }); ok {
		_ = d.SetReadDeadline(deadline)
	}
}

// maxSocketBase is the longest temporary directory the sockets can live
// under: a unix socket's path must fit in 108 bytes (104 on macOS), and
// go-plugin adds its own directory (plugin-dirNNNNNNNNNN) and the socket's
// name (pluginNNNNNNNNNN), ~36 bytes.
const maxSocketBase = 60

// socketTempDir is where go-plugin makes each plugin's private socket
// directory (mode 0700), and where an attached plugin's host API gets one:
//   - TMPDIR, when the user set it: their choice of where such files go;
//   - otherwise a directory in memory when the system has one the user may
//     use (the per-user runtime directory, or a shared memory file system
//     on Linux; see memorySocketBase): each plugin start makes and removes
//     a directory, a file and two sockets there, which on a disk file
//     system with journaling and online discard cost ~0.7 ms of CPU per
//     plugin against ~0.1 ms in memory;
//   - otherwise the system's temporary directory.
//
// A candidate too long for a socket below it is skipped (a deep TMPDIR
// made every plugin fail to listen), down to /tmp, where the directory is
// as private.
func socketTempDir() string {
	if dir := os.Getenv("TMPDIR"); dir != "" && len(dir) <= maxSocketBase {
		return dir
	}
	if dir := memorySocketBase(); dir != "" && len(dir) <= maxSocketBase {
		return dir
	}
	dir := os.TempDir()
	if len(dir) <= maxSocketBase {
		return dir
	}
	if fi, err := os.Stat("/tmp"); err == nil && fi.IsDir() {
		return "/tmp"
	}
	return dir
}
