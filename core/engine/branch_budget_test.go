package engine

import (
	"context"
	"strings"
	"testing"
)

// TestBranchBudgetFromModelWindow: the branch summary's budget is the
// session model's window minus branchSummary.reserveTokens when the
// model is known (pi's rule: model.contextWindow − reserveTokens) — the
// configured contextWindow when the session names its model, the
// caller's ModelWindow when it says — not branchSummary.contextWindow's
// 128 000 whatever the model.
func TestBranchBudgetFromModelWindow(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name        string
		window      int
		modelWindow int
	}{{"session model", 10000, 0}, {"caller's model", 200000, 10000}} {
		t.Run(tc.name, func(t *testing.T) {
			store, _ := newSession(t, 120) // about 30 000 tokens
			st := testSettings()
			st.ContextWindow = tc.window
			st.BranchSummary.ReserveTokens = 2000
			sum := newScript()
			s := New(store, Options{Settings: st, Summarizer: sum})
			target := store.Tree().Entries[1].ID
			if _, err := s.Navigate(ctx, target, NavigateOptions{Mode: SummarizeAlways, ModelWindow: tc.modelWindow}); err != nil {
				t.Fatal(err)
			}
			if sum.count() != 1 {
				t.Fatalf("%d summarizer calls", sum.count())
			}
			// 8 000 tokens hold about 32 of the 120 turns; 126 000 all.
			if n := strings.Count(sum.reqs[0].Prompt, "[User]:"); n == 0 || n > 50 {
				t.Errorf("%d user messages in the branch summary's input, want the budget of a 10 000-token window", n)
			}
		})
	}
}
