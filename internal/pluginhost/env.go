package pluginhost

import (
	"os"
	"slices"
	"sort"
	"strconv"

	"github.com/pith-dev/pith/internal/wire"
)

// BaseEnv are the host's variables every plugin receives (when set): what
// a program needs to find executables, a home and a temporary directory,
// and to read text and times as the user does. Nothing else of the host's
// environment reaches a plugin unless its configuration names it in
// inheritEnv: the host's API keys and tokens are not a plugin's business.
var BaseEnv = []string{"PATH", "HOME", "TMPDIR", "LANG", "TZ"}

// handshakeEnv are the variables the host sets for the plugin itself:
// go-plugin's handshake (cookie, port range, protocol versions, the
// private directory, mode 0700, in which a Go plugin makes its socket, the
// host's TLS certificate) and the host pid the SDK's watchdog watches.
var handshakeEnv = []string{
	wire.Handshake.MagicCookieKey, "PLUGIN_MIN_PORT", "PLUGIN_MAX_PORT",
	"PLUGIN_PROTOCOL_VERSIONS", "PLUGIN_UNIX_SOCKET_DIR", "PLUGIN_CLIENT_CERT", wire.EnvHostPID,
}

// environment is the plugin's environment before go-plugin appends its
// handshake variables (which therefore win over a configured value): the
// base variables and the inheritEnv list taken from the host when set, then
// the configured env, which overrides them.
func (s Spec) environment(lookup func(string) (string, bool)) []string {
	vals := map[string]string{}
	for _, name := range slices.Concat(BaseEnv, s.InheritEnv) {
		if v, ok := lookup(name); ok {
			vals[name] = v
		}
	}
	for k, v := range s.Env {
		vals[k] = v
	}
	vals[wire.EnvHostPID] = strconv.Itoa(os.Getpid())
	keys := make([]string, 0, len(vals))
	for k := range vals {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	env := make([]string, len(keys))
	for i, k := range keys {
		env[i] = k + "=" + vals[k]
	}
	return env
}

// EnvNames lists, sorted, the names of the variables the plugin receives
// when started from a host whose environment is lookup — never their
// values. `pith plugins check` shows it.
func (s Spec) EnvNames(lookup func(string) (string, bool)) []string {
	seen := map[string]bool{}
	for _, kv := range s.environment(lookup) {
		for i := range len(kv) {
			if kv[i] == '=' {
				seen[kv[:i]] = true
				break
			}
		}
	}
	for _, name := range handshakeEnv {
		seen[name] = true
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
