package pluginhost_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pith-dev/pith/core/engine"
	"github.com/pith-dev/pith/hooks"
	"github.com/pith-dev/pith/internal/dispatch"
	"github.com/pith-dev/pith/internal/pluginhost"
	"github.com/pith-dev/pith/internal/sessiongen"
	"github.com/pith-dev/pith/internal/wire"
	"github.com/pith-dev/pith/store/files"
	"github.com/pith-dev/pith/summarize/builtin"
)

// TestTruncatedPathIsPagedThroughTheHost: with a 4 KiB pathEntriesBytes a
// real plugin receives a cut path marked truncated, and pages the whole
// path (pathLength entries) through the host API.
func TestTruncatedPathIsPagedThroughTheHost(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	if err := sessiongen.GenerateFile(path, sessiongen.Small(11, 300)); err != nil {
		t.Fatal(err)
	}
	store, err := files.Open(path, files.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	sp := spec("pager", 1, "-before-compact", "page")
	sp.Limits.PathEntriesBytes = 4 << 10
	host := &engine.HostAPI{Lookup: engine.SingleSession(store)}
	_, d := startAll(t, pluginhost.Options{Host: host}, nil, sp)
	st := engine.DefaultSettings()
	st.KeepRecentTokens = 1000
	eng := engine.New(store, engine.Options{Summarizer: builtin.New(builtin.Options{}), Settings: st, Hooks: d})
	_, err = eng.Compact(context.Background(), "")
	if !errors.Is(err, engine.ErrCancelled) {
		t.Fatalf("err = %v, want the plugin's cancel carrying its report", err)
	}
	var sent, length, paged, labels int
	var truncated bool
	report := err.Error()[strings.Index(err.Error(), "truncated="):]
	if _, err := fmt.Sscanf(report, "truncated=%t sent=%d length=%d paged=%d labels=%d", &truncated, &sent, &length, &paged, &labels); err != nil {
		t.Fatalf("report %q: %v", report, err)
	}
	want := len(store.Tree().Path(store.Leaf()))
	if !truncated || sent == 0 || length != want || paged != want {
		t.Errorf("truncated %v, sent %d, path length %d, paged %d; want truncated, some sent, %d and %d", truncated, sent, length, paged, want, want)
	}
}

// TestUnsendableEventFallsUnderTheFailurePolicy: every variable-length
// field of an event is cut to fit the wire except pathological ones that
// cannot be (here a file list of 258 MiB). Such an event is not sent. A
// guard with failure closed stops the operation with a host error; with
// failure open the operation goes on and the log says a host error kept
// the plugin from being asked.
func TestUnsendableEventFallsUnderTheFailurePolicy(t *testing.T) {
	name := strings.Repeat("f", 1<<20)
	ev := preparedEvent()
	for range wire.MaxMessageSize>>20 + 2 {
		ev.Preparation.ReadFiles = append(ev.Preparation.ReadFiles, name) // shared bytes: cheap
	}
	for _, failure := range []hooks.Failure{hooks.FailureClosed, hooks.FailureOpen} {
		t.Run(string(failure), func(t *testing.T) {
			log, buf := bufLogger()
			sp := spec("guard", 1, "-before-compact", "cancel")
			sp.Failure = failure
			_, d := startAll(t, pluginhost.Options{Logger: log}, nil, sp)
			out, err := d.BeforeCompact(context.Background(), ev, limits)
			if failure == hooks.FailureClosed {
				if !errors.Is(err, hooks.ErrPluginFailed) || !errors.Is(err, dispatch.ErrPayloadTooLarge) {
					t.Fatalf("closed guard: out %+v, err %v; want the operation stopped", out, err)
				}
			} else if err != nil || out.Cancelled {
				t.Fatalf("open guard: out %+v, err %v", out, err)
			}
			if !strings.Contains(buf.String(), "host error") {
				t.Errorf("log does not report the host error:\n%s", buf.String())
			}
		})
	}
}

// TestHugeMessagesAreCutNotRefused: messages to summarize far past the
// wire's limit no longer keep the event from being sent: they are cut to
// the plugin's messagesBytes and the guard is asked.
func TestHugeMessagesAreCutNotRefused(t *testing.T) {
	chunk := []byte(`"` + strings.Repeat("m", 1<<20) + `"`)
	ev := preparedEvent()
	ev.Preparation.MessagesToSummarize = nil
	for range wire.MaxMessageSize>>20 + 2 {
		ev.Preparation.MessagesToSummarize = append(ev.Preparation.MessagesToSummarize, chunk) // shared bytes: cheap
	}
	sp := spec("guard", 1, "-before-compact", "cancel")
	sp.Failure = hooks.FailureOpen
	sp.Limits.MessagesBytes = 8 << 20
	_, d := startAll(t, pluginhost.Options{}, nil, sp)
	out, err := d.BeforeCompact(context.Background(), ev, limits)
	if err != nil || !out.Cancelled {
		t.Fatalf("out %+v, err %v; want the guard's cancel", out, err)
	}
}
