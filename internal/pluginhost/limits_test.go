package pluginhost_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pith-dev/pith/core/engine"
	"github.com/pith-dev/pith/hooks"
	"github.com/pith-dev/pith/internal/dispatch"
	"github.com/pith-dev/pith/internal/pluginhost"
	"github.com/pith-dev/pith/internal/sessiongen"
	"github.com/pith-dev/pith/store/files"
	"github.com/pith-dev/pith/summarize/builtin"
)

// compactThrough opens a copy of a generated session, runs one manual
// compaction with the plugins of specs, and returns its error, the file's
// size before and after, and the host log.
func compactThrough(t *testing.T, specs ...pluginhost.Spec) (before, after int64, logs string, err error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s.jsonl")
	if err := sessiongen.GenerateFile(path, sessiongen.Small(7, 400)); err != nil {
		t.Fatal(err)
	}
	log, buf := bufLogger()
	store, err := files.Open(path, files.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	host := &engine.HostAPI{Lookup: engine.SingleSession(store)}
	_, d := startAll(t, pluginhost.Options{Logger: log, Host: host}, nil, specs...)
	st := engine.DefaultSettings()
	st.KeepRecentTokens = 2000
	eng := engine.New(store, engine.Options{Summarizer: builtin.New(builtin.Options{}), Settings: st, Hooks: d, Logger: log})
	fi, _ := os.Stat(path)
	_, err = eng.Compact(context.Background(), "")
	fi2, _ := os.Stat(path)
	return fi.Size(), fi2.Size(), buf.String(), err
}

// TestOversizedResultsFallUnderTheFailurePolicy: a real plugin answers with
// 20 MB preserveData or details, preserveData nested 5 000 deep, or a 20 MB
// context line. With failure closed the compaction is refused, the file is
// unchanged, and the log names the limit; with failure open the result is
// dropped and the compaction is the built-in one, without it.
func TestOversizedResultsFallUnderTheFailurePolicy(t *testing.T) {
	cases := []struct {
		args  []string
		limit string
	}{
		{[]string{"-compacting", "huge-preserve"}, "limits.preserveDataBytes"},
		{[]string{"-compacting", "deep-preserve"}, "limits.jsonDepth"},
		{[]string{"-compacting", "huge-context"}, "limits.contextBytes"},
		{[]string{"-before-compact", "huge-details"}, "limits.detailsBytes"},
	}
	for _, tc := range cases {
		t.Run(tc.limit+"/closed", func(t *testing.T) {
			sp := spec("bloat", 1, tc.args...)
			sp.Failure = hooks.FailureClosed
			before, after, logs, err := compactThrough(t, sp)
			if !errors.Is(err, hooks.ErrPluginFailed) || !errors.Is(err, dispatch.ErrOverLimit) {
				t.Fatalf("err = %v, want a plugin failure over a limit", err)
			}
			if !strings.Contains(err.Error(), tc.limit) || !strings.Contains(logs, tc.limit) {
				t.Errorf("neither error nor log name %s:\n%v\n%s", tc.limit, err, logs)
			}
			if after != before {
				t.Errorf("session grew from %d to %d bytes", before, after)
			}
		})
		t.Run(tc.limit+"/open", func(t *testing.T) {
			before, after, logs, err := compactThrough(t, spec("bloat", 1, tc.args...))
			if err != nil {
				t.Fatalf("an open plugin's refused result failed the compaction: %v", err)
			}
			if grown := after - before; grown > 1<<20 {
				t.Errorf("session grew by %d bytes: the refused result was written", grown)
			}
			if !strings.Contains(logs, tc.limit) {
				t.Errorf("log does not name %s:\n%s", tc.limit, logs)
			}
		})
	}
}
