package sdk

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/hashicorp/go-hclog"
	"github.com/pith-dev/pith/internal/proctree"
	"github.com/pith-dev/pith/internal/wire"
)

// hostGone ends the plugin and every process it started: a plugin's
// children must not outlive the host any more than the plugin itself. It
// kills first and logs last: with the host gone, a write to stderr can
// raise SIGPIPE and end the plugin before its children are dealt with.
func hostGone(log hclog.Logger, why string) {
	removeSocketDir()
	proctree.KillSelfTree()
	log.Warn(why + "; ended the plugin and its processes")
	os.Exit(0)
}

// removeSocketDir removes the private directory the host made for this
// plugin's sockets (go-plugin's PLUGIN_UNIX_SOCKET_DIR, mode 0700, holding
// the plugin's socket and the host's for its API). The host removes it when
// it stops the plugin; a host that is gone cannot, and every plugin of
// every crashed host would leave one in the temporary directory. Only a
// directory named as go-plugin names it is removed: the variable comes
// from the host, but a plugin run by hand may have anything there.
func removeSocketDir() {
	dir := os.Getenv(wire.EnvUnixSocketDir)
	if dir == "" || !filepath.IsAbs(dir) || !strings.HasPrefix(filepath.Base(dir), "plugin-dir") {
		return
	}
	_ = os.RemoveAll(dir)
}

// onTerminate ends the plugin's tree on SIGTERM, the parent-death signal
// the host asks the kernel for on Linux: the default action would end the
// plugin alone and leave its children behind.
func onTerminate(log hclog.Logger) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGTERM)
	go func() {
		<-ch
		hostGone(log, "terminated (the host is gone or asked for it)")
	}()
}

// exitRunByHand ends a plugin run by hand, not by Pith: status 1, as a
// go-plugin plugin run by hand exits. A variable so that in-process tests
// can see Serve refuse without ending.
var exitRunByHand = func() { os.Exit(1) }

// exitStartFailed ends a plugin the host started that could not serve:
// status 1, as go-plugin's Serve exits then.
var exitStartFailed = func() { os.Exit(1) }

// reportStartError says why the plugin does not serve: as a JSON log line
// when Pith started it (forHost) and parses its stderr, as one plain line
// when a person ran it and reads the terminal.
func reportStartError(log hclog.Logger, forHost bool, err error) {
	if forHost {
		log.Error(err.Error())
		return
	}
	fmt.Fprintln(hostStderr, err)
}
