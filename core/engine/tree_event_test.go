package engine

import (
	"context"
	"testing"

	"github.com/pith-dev/pith/hooks"
)

// treeHooks records the session_before_tree events of a navigation.
type treeHooks struct {
	fakeHooks
	before []*hooks.BeforeTreeEvent
}

func (f *treeHooks) BeforeTree(ctx context.Context, ev *hooks.BeforeTreeEvent, lim hooks.SummaryLimits) (hooks.BeforeTreeOutcome, error) {
	f.before = append(f.before, ev)
	return hooks.BeforeTreeOutcome{}, nil
}

func (f *treeHooks) Tree(ctx context.Context, ev *hooks.TreeEvent) error { return nil }

// session_before_tree tells plugins the user's instructions as pi does,
// with whether they replace the summarization instructions, so that a
// plugin writing the summary itself follows them the same way.
func TestBeforeTreeCarriesTheInstructions(t *testing.T) {
	for _, replace := range []bool{false, true} {
		store, _ := newSession(t, 6)
		h := &treeHooks{}
		s := New(store, Options{Settings: testSettings(), Summarizer: newScript(), Hooks: h})
		target := store.Tree().Entries[1].ID
		opts := NavigateOptions{Mode: SummarizeAlways, CustomInstructions: "only the decisions", ReplaceInstructions: replace}
		if _, err := s.Navigate(context.Background(), target, opts); err != nil {
			t.Fatal(err)
		}
		if len(h.before) != 1 || h.before[0].CustomInstructions != "only the decisions" || h.before[0].ReplaceInstructions != replace {
			t.Fatalf("replace %v: session_before_tree events %+v", replace, h.before)
		}
	}
}
