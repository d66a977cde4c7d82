package sdk

import (
	"os"
	"os/signal"
	"syscall"

	"github.com/hashicorp/go-hclog"
	"github.com/pith-dev/pith/internal/proctree"
)

// hostGone ends the plugin and every process it started: a plugin's
// children must not outlive the host any more than the plugin itself. It
// kills first and logs last: with the host gone, a write to stderr can
// raise SIGPIPE and end the plugin before its children are dealt with.
func hostGone(log hclog.Logger, why string) {
	proctree.KillSelfTree()
	log.Warn(why + "; ended the plugin and its processes")
	os.Exit(0)
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
