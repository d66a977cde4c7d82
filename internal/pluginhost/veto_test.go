package pluginhost_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pith-dev/pith/core/engine"
	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/hooks"
	"github.com/pith-dev/pith/internal/dispatch"
	"github.com/pith-dev/pith/internal/pluginhost"
	"github.com/pith-dev/pith/internal/sessiongen"
	"github.com/pith-dev/pith/sdk/sdktest"
	"github.com/pith-dev/pith/store/files"
	"github.com/pith-dev/pith/summarize/builtin"
)

// labelledSession writes a never-compacted session whose oldest label is
// no-compact, followed by enough other labels that the label list alone
// passes a few KiB: cut to a small budget, the no-compact label is not
// among the labels sent.
func labelledSession(t *testing.T, dir string) *files.Session {
	t.Helper()
	path := filepath.Join(dir, "s.jsonl")
	opts := sessiongen.Small(7, 400)
	opts.Compaction, opts.Branch, opts.BranchSummary = 0, 0, 0
	if err := sessiongen.GenerateFile(path, opts); err != nil {
		t.Fatal(err)
	}
	store, err := files.Open(path, files.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	first := store.Tree().Path(store.Leaf())[0].ID
	label := func(target, text string) {
		if _, err := store.Append(session.Draft{Type: session.TypeLabel, Fields: map[string]any{"targetId": target, "label": text}}); err != nil {
			t.Fatal(err)
		}
	}
	label(first, "no-compact")
	for i := range 200 {
		label(store.Leaf().ID, fmt.Sprintf("checkpoint-%03d", i))
	}
	return store
}

// TestFailOpenGuardVetoesWhateverTheSize: with 4 KiB budgets the path,
// the labels and the messages to summarize are all cut, so the
// no-compact label is not in what the host sends. Both guards (the
// example and the SDK README's) run as real subprocesses with failure
// open, page the path through the host API and still cancel: the veto
// does not depend on the payload's size, and the session is untouched.
func TestFailOpenGuardVetoesWhateverTheSize(t *testing.T) {
	for _, pkg := range []string{
		"github.com/pith-dev/pith/plugins/examples/guard",
		"github.com/pith-dev/pith/internal/testplugins/guard",
	} {
		t.Run(filepath.Base(filepath.Dir(pkg))+"/guard", func(t *testing.T) {
			dir := t.TempDir()
			bin, err := sdktest.BuildTo(dir, pkg)
			if err != nil {
				t.Fatal(err)
			}
			store := labelledSession(t, dir)
			before, _ := os.Stat(store.Path())

			var seen *hooks.BeforeCompactEvent
			sp := pluginhost.Spec{Name: "guard", Path: bin, Failure: hooks.FailureOpen,
				Limits: hooks.Limits{PathEntriesBytes: 4 << 10, MessagesBytes: 4 << 10}}
			log, buf := bufLogger()
			_, d := startAll(t, pluginhost.Options{Logger: log, Host: &engine.HostAPI{Lookup: engine.SingleSession(store)}}, nil, sp)
			st := engine.DefaultSettings()
			st.KeepRecentTokens = 1000
			eng := engine.New(store, engine.Options{Summarizer: builtin.New(builtin.Options{}), Settings: st, Hooks: spy{d, &seen}, Logger: log})
			_, err = eng.Compact(context.Background(), "")
			if !errors.Is(err, engine.ErrCancelled) || !strings.Contains(err.Error(), "guard") {
				t.Fatalf("compaction of a no-compact session with a fail-open guard: %v\n%s", err, buf.String())
			}
			after, _ := os.Stat(store.Path())
			if after.Size() != before.Size() {
				t.Errorf("the session changed: %d → %d bytes", before.Size(), after.Size())
			}
			// What the guard was sent: cut, and without the label.
			cut := dispatch.BoundBeforeCompact(*seen, sp.Limits)
			for _, l := range cut.Labels {
				if l.Label == "no-compact" {
					t.Fatal("the no-compact label was sent: the test does not exercise paging")
				}
			}
			if !cut.PathTruncated || !cut.LabelsTruncated || !cut.Preparation.MessagesTruncated {
				t.Errorf("path %v, labels %v, messages %v truncated; want all three", cut.PathTruncated, cut.LabelsTruncated, cut.Preparation.MessagesTruncated)
			}
			if p := cut.Preparation; len(p.MessagesToSummarize) >= p.MessagesTotal || p.MessagesTotal == 0 {
				t.Errorf("sent %d of %d messages to summarize", len(p.MessagesToSummarize), p.MessagesTotal)
			}
		})
	}
}

// spy records the event the engine hands the dispatcher.
type spy struct {
	*dispatch.Dispatcher
	seen **hooks.BeforeCompactEvent
}

func (s spy) BeforeCompact(ctx context.Context, ev *hooks.BeforeCompactEvent, lim hooks.CompactionLimits) (hooks.BeforeCompactOutcome, error) {
	*s.seen = ev
	return s.Dispatcher.BeforeCompact(ctx, ev, lim)
}
