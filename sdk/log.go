package sdk

import (
	"os"
	"sync"

	"github.com/hashicorp/go-hclog"
)

// hostStderr is the process's original standard error, captured before
// go-plugin redirects os.Stderr into its stdio stream: it is the pipe the
// host reads and parses as the plugin's log.
var hostStderr = os.Stderr

// EnvLogLevel names the environment variable setting the plugin log level
// (trace, debug, info, warn, error); default info.
const EnvLogLevel = "PITH_PLUGIN_LOG_LEVEL"

var logger = sync.OnceValue(func() hclog.Logger {
	level := hclog.LevelFromString(os.Getenv(EnvLogLevel))
	if level == hclog.NoLevel {
		level = hclog.Info
	}
	return hclog.New(&hclog.LoggerOptions{
		Output:     hostStderr,
		JSONFormat: true,
		Level:      level,
	})
})

// Logger returns the plugin's logger. Its JSON lines go to the host, which
// logs them under the plugin's configured name.
func Logger() hclog.Logger { return logger() }
