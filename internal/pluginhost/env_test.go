package pluginhost_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pith-dev/pith/internal/pluginhost"
)

// TestPluginEnvironmentIsMinimal: a real plugin dumps its environment. The
// host's secrets are not in it; the allow-listed variable, the configured
// env and the handshake variables are, and every name it sees is one
// EnvNames (what `pith plugins check` prints) announces.
func TestPluginEnvironmentIsMinimal(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-host-secret")
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-host-secret")
	t.Setenv("PITH_TEST_ALLOWED", "allowed-value")
	t.Setenv("LANG", "C.UTF-8")
	file := filepath.Join(t.TempDir(), "env")
	sp := spec("envdump", 1, "-compact", "record", "-dump-env", file)
	sp.Env = map[string]string{"PLUGIN_SETTING": "configured", "LANG": "fr_FR.UTF-8"}
	sp.InheritEnv = []string{"PITH_TEST_ALLOWED", "PITH_TEST_UNSET"}
	sup := pluginhost.NewSupervisor(sp, pluginhost.Options{})
	if err := sup.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer sup.Stop(context.Background())
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, line := range strings.Split(string(b), "\x00") {
		k, v, _ := strings.Cut(line, "=")
		got[k] = v
	}
	if strings.Contains(string(b), "host-secret") {
		t.Errorf("a host secret reached the plugin:\n%s", b)
	}
	for k, want := range map[string]string{"PITH_TEST_ALLOWED": "allowed-value", "PLUGIN_SETTING": "configured", "LANG": "fr_FR.UTF-8"} {
		if got[k] != want {
			t.Errorf("%s = %q, want %q", k, got[k], want)
		}
	}
	for _, k := range []string{"PATH", "PITH_HOST_PID", "PITH_PLUGIN_MAGIC_COOKIE", "PLUGIN_CLIENT_CERT"} {
		if _, ok := got[k]; !ok {
			t.Errorf("%s missing", k)
		}
	}
	names := sp.EnvNames(os.LookupEnv)
	for k := range got {
		if !slices.Contains(names, k) {
			t.Errorf("the plugin sees %s, which EnvNames %v does not announce", k, names)
		}
	}
	if slices.Contains(names, "PITH_TEST_UNSET") {
		t.Error("EnvNames lists an allow-listed variable the host does not have")
	}
}
