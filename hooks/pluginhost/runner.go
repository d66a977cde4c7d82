package pluginhost

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"

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
	stdout, stderr io.ReadCloser
	// socketDir is the directory go-plugin made for the plugin's socket;
	// go-plugin removes it when it kills a started process, and Start
	// when there is none.
	socketDir string
}

var _ runner.Runner = (*processRunner)(nil)

// newProcessRunner prepares cmd, whose environment go-plugin has not seen:
// goPluginEnv (the handshake variables go-plugin put on its placeholder
// command) is added last.
func newProcessRunner(cmd *exec.Cmd, goPluginEnv []string, socketDir string) (*processRunner, error) {
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
	return &processRunner{cmd: cmd, stdout: stdout, stderr: stderr, socketDir: socketDir}, nil
}

func (r *processRunner) Start(context.Context) error {
	err := proctree.Start(r.cmd)
	if err != nil && r.socketDir != "" {
		// No process: go-plugin's Kill skips its cleanup, and a daemon
		// retrying a broken plugin would leave one directory per try.
		os.RemoveAll(r.socketDir)
	}
	return err
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
	if err := r.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
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

// maxSocketBase is the longest temporary directory the sockets can live
// under: a unix socket's path must fit in 108 bytes (104 on macOS), and
// go-plugin adds its own directory (plugin-dirNNNNNNNNNN) and the socket's
// name (pluginNNNNNNNNNN), ~36 bytes.
const maxSocketBase = 60

// socketTempDir is where go-plugin makes each plugin's private socket
// directory: the system's temporary directory, unless its path is too
// long for a socket below it (a deep TMPDIR made every plugin fail to
// listen); then /tmp, where the directory is as private (mode 0700).
func socketTempDir() string {
	dir := os.TempDir()
	if len(dir) <= maxSocketBase {
		return dir
	}
	if fi, err := os.Stat("/tmp"); err == nil && fi.IsDir() {
		return "/tmp"
	}
	return dir
}
