package pluginhost_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/pith-dev/pith/internal/pluginhost"
)

// TestPluginDoesNotReadHostStdin: what is piped into the host (or typed
// at the terminal running `pith serve`) is not the plugin's to read; its
// standard input is empty. (go-plugin's own runner passes the host's.)
func TestPluginDoesNotReadHostStdin(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteString("the user's secret\n"); err != nil {
		t.Fatal(err)
	}
	w.Close()
	saved := os.Stdin
	os.Stdin = r
	t.Cleanup(func() { os.Stdin = saved; r.Close() })

	dump := filepath.Join(t.TempDir(), "stdin")
	sup := pluginhost.NewSupervisor(spec("reader", 1, "-compact", "record", "-dump-stdin", dump), pluginhost.Options{})
	if err := sup.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	sup.Stop(context.Background())
	got, err := os.ReadFile(dump)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 0 {
		t.Fatalf("the plugin read %q from the host's standard input", got)
	}
}
