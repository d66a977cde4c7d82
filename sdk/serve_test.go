package sdk_test

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	pb "github.com/pith-dev/pith/internal/gen/pith/hooks/v1"
	"github.com/pith-dev/pith/internal/wire"
	"github.com/pith-dev/pith/sdk"
	"github.com/pith-dev/pith/sdk/sdktest"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/emptypb"
)

type pointerOnly struct{}

func (*pointerOnly) Compact(context.Context, *sdk.CompactEvent) error { return nil }

type wrongSignature struct{}

func (wrongSignature) Compact(ctx context.Context, ev sdk.CompactEvent) error { return nil }

type nothing struct{}

func TestCheckHandler(t *testing.T) {
	for _, tc := range []struct {
		name string
		h    sdk.Handler
		want []string // substrings of the error; nil means no error
	}{
		{"value receiver", compactOnly{}, nil},
		{"pointer to pointer receiver", &pointerOnly{}, nil},
		{"funcs", sdk.Funcs{OnCompact: func(context.Context, *sdk.CompactEvent) error { return nil }}, nil},
		{"value of pointer receiver", pointerOnly{}, []string{"pointer receiver", "*sdk_test.pointerOnly", "pass &sdk_test.pointerOnly"}},
		{"wrong signature", wrongSignature{}, []string{"Compact has type", "want func(context.Context, *sdk.CompactEvent) error"}},
		{"no methods", nothing{}, []string{"method set of sdk_test.nothing has none of BeforeCompact, Compacting, Compact, BeforeTree, Tree"}},
		{"empty funcs", sdk.Funcs{}, []string{"has none of"}},
		{"nil", nil, []string{"nil"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := sdk.CheckHandler(tc.h)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("CheckHandler: %v", err)
				}
				return
			}
			if !errors.Is(err, sdk.ErrNoEvents) {
				t.Fatalf("CheckHandler = %v, want ErrNoEvents", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// Serve refuses before it touches go-plugin, which would os.Exit.
func TestServeRefuses(t *testing.T) {
	if err := sdk.Serve(pointerOnly{}, sdk.WithName("x")); !errors.Is(err, sdk.ErrNoEvents) {
		t.Errorf("Serve(handler of no event) = %v, want ErrNoEvents", err)
	}
	t.Setenv(wire.Handshake.MagicCookieKey, "")
	sdk.ReturnWhenRunByHand(t)
	if err := sdk.Serve(compactOnly{}); !errors.Is(err, sdk.ErrNotLaunchedByHost) {
		t.Errorf("Serve outside the host = %v, want ErrNotLaunchedByHost", err)
	}
}

// A plugin run by hand says why in one plain line on stderr — not a log
// line meant for the host — and exits with status 1, as a go-plugin plugin
// does, even though it ignores Serve's error.
func TestCompatPluginRunByHand(t *testing.T) {
	bin := sdktest.Build(t, compatPlugin)
	cmd := exec.Command(bin)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Errorf("exit: %v, want status 1", err)
	}
	want := "this binary is a Pith plugin: list it under plugins: in Pith's configuration and Pith starts it\n"
	if stderr.String() != want || stdout.Len() != 0 {
		t.Errorf("stderr %q, stdout %q; want stderr %q", stderr.String(), stdout.String(), want)
	}
}

// compatPlugin is a plugin written against the SDK before Serve returned
// an error: value-receiver methods, `sdk.Serve(h, sdk.WithName(…))` as a
// bare statement. It is kept that way on purpose.
const compatPlugin = "github.com/pith-dev/pith/internal/testplugins/guard"

// TestCompatPlugin: such a plugin still builds, starts and answers through
// sdktest, as a subprocess; in-process runs the README's guard, the same
// handler.
func TestCompatPlugin(t *testing.T) {
	bin := sdktest.Build(t, compatPlugin)
	for name, h := range map[string]*sdktest.Harness{
		"in-process": sdktest.InProcess(t, guard{}),
		"subprocess": sdktest.Subprocess(t, bin),
	} {
		t.Run(name, func(t *testing.T) {
			res, err := h.BeforeCompact(context.Background(), &sdk.BeforeCompactEvent{SessionID: "s", Labels: []sdk.Label{{EntryID: "e1", Label: "no-compact"}}})
			if err != nil || res == nil || !res.Cancel {
				t.Fatalf("BeforeCompact = %+v, %v; want a cancel", res, err)
			}
			cr, err := h.Compacting(context.Background(), &sdk.CompactingEvent{SessionID: "s", ModifiedFiles: []string{"a.go"}})
			if err != nil || cr == nil || len(cr.Context) == 0 || cr.Context[0] != "Keep every decision the user made explicit." {
				t.Fatalf("Compacting = %+v, %v", cr, err)
			}
		})
	}
}

// TestPluginHandshakeByHand drives a real plugin process the way a
// go-plugin host does, with no host code: the handshake line it prints
// names a socket in the directory given (without TLS when no certificate
// is passed), go-plugin's controller stops it, and it exits 0. A host
// offering only other protocol versions, or a socket directory that does
// not exist, gets a log line saying why and exit status 1, no handshake.
func TestPluginHandshakeByHand(t *testing.T) {
	bin := sdktest.Build(t, compatPlugin)
	dir := t.TempDir()
	base := []string{"PATH=" + os.Getenv("PATH"), wire.Handshake.MagicCookieKey + "=" + wire.Handshake.MagicCookieValue}
	run := func(env ...string) (*exec.Cmd, *strings.Builder, func() string) {
		cmd := exec.Command(bin)
		cmd.Env = append(slices.Clone(base), env...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(out)
		return cmd, &stderr, func() string { line, _ := br.ReadString('\n'); return line }
	}

	cmd, _, line := run(wire.EnvUnixSocketDir+"="+dir, wire.EnvProtocolVersions+"=3,1")
	f := strings.Split(strings.TrimSuffix(line(), "\n"), "|")
	if len(f) != 6 || f[0] != "1" || f[1] != "1" || f[2] != "unix" || filepath.Dir(f[3]) != dir || f[4] != "grpc" || f[5] != "" {
		t.Fatalf("handshake fields %q", f)
	}
	conn, err := grpc.NewClient("unix:"+f[3], grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	desc, err := pb.NewHooksClient(conn).Describe(context.Background(), &pb.DescribeRequest{})
	if err != nil || len(desc.GetEvents()) == 0 {
		t.Fatalf("Describe = %v, %v", desc, err)
	}
	if err := conn.Invoke(context.Background(), "/plugin.GRPCController/Shutdown", &emptypb.Empty{}, &emptypb.Empty{}); err != nil {
		t.Errorf("controller Shutdown: %v", err)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("after the controller's Shutdown: %v, want exit 0", err)
	}
	if _, err := os.Stat(f[3]); !os.IsNotExist(err) {
		t.Errorf("socket %s left behind: %v", f[3], err)
	}

	for name, c := range map[string]struct{ env, want string }{
		"other versions": {wire.EnvProtocolVersions + "=2,3", "protocol versions"},
		"no such dir":    {wire.EnvUnixSocketDir + "=" + filepath.Join(dir, "gone"), "listen"},
	} {
		t.Run(name, func(t *testing.T) {
			cmd, stderr, line := run(c.env)
			if l := line(); l != "" {
				t.Errorf("printed %q, want no handshake", l)
			}
			var exit *exec.ExitError
			if err := cmd.Wait(); !errors.As(err, &exit) || exit.ExitCode() != 1 {
				t.Errorf("exit: %v, want status 1", err)
			}
			if !strings.Contains(stderr.String(), c.want) || !strings.Contains(stderr.String(), `"@level":"error"`) {
				t.Errorf("stderr %q, want an error log line about %q", stderr.String(), c.want)
			}
		})
	}
}
