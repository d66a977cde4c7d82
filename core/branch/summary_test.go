package branch

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/pith-dev/pith/core/prompts"
	"github.com/pith-dev/pith/core/summary"
	"github.com/pith-dev/pith/core/tokens"
	"github.com/pith-dev/pith/core/transcript"
)

// preparedBranch is branch C of treeLines (u3, a3) prepared without limit.
func preparedBranch(t *testing.T) Prepared {
	t.Helper()
	tree := openStore(t, writeSession(t, treeLines)).Tree()
	entries, _ := CollectEntriesForBranchSummary(tree, "000000a3", "000000a2")
	return PrepareBranchEntries(entries, 0)
}

func TestBuildRequest(t *testing.T) {
	p := preparedBranch(t)
	tests := []struct {
		name      string
		opts      SummaryOptions
		empty     bool // build from an empty preparation
		wantErr   error
		maxTokens int
	}{
		{name: "defaults", maxTokens: SummaryMaxTokens},
		{name: "model output limit", opts: SummaryOptions{ModelOutputLimit: 1000}, maxTokens: 1000},
		{name: "large model output limit", opts: SummaryOptions{ModelOutputLimit: 64000}, maxTokens: SummaryMaxTokens},
		{name: "fits the window", opts: SummaryOptions{InputBudget: 100000}, maxTokens: SummaryMaxTokens},
		{name: "prompt alone too large", opts: SummaryOptions{InputBudget: 50}, wantErr: transcript.ErrInputTooLarge},
		{name: "nothing", empty: true, wantErr: ErrNothingToSummarize},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := p
			if tt.empty {
				in = Prepared{}
			}
			req, err := BuildRequest(in, tt.opts)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("error %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if req.MaxTokens != tt.maxTokens || req.Purpose != summary.PurposeBranch {
				t.Errorf("max tokens %d (want %d), purpose %s", req.MaxTokens, tt.maxTokens, req.Purpose)
			}
			if strings.Contains(req.Prompt, prompts.Omitted) {
				t.Error("omission note in a request that fits")
			}
		})
	}
}

// TestGenerateSummaryIgnoresLateAnswer: a summarizer that answers although
// the context was cancelled must not produce a summary.
func TestGenerateSummaryIgnoresLateAnswer(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	s := summary.Func(func(context.Context, summary.Request) (summary.Result, error) {
		cancel()
		return summary.Result{Text: "## Goal\nlate", FinishReason: summary.FinishStop}, nil
	})
	if _, _, err := GenerateSummary(ctx, s, preparedBranch(t), SummaryOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want context.Canceled", err)
	}
}

// TestBuildRequestLeavesOutTheMiddle: a branch too long for the
// summarizer's window loses its oldest middle part, and the prompt says so.
func TestBuildRequestLeavesOutTheMiddle(t *testing.T) {
	var p Prepared
	for _, g := range loadPiCases(t) {
		if g.BudgetKind == "default" && g.Messages >= 20 {
			entries, _ := CollectEntriesForBranchSummary(generatedTree(t, g.File), g.OldLeafID, g.TargetID)
			p = PrepareBranchEntries(entries, g.Budget)
			break
		}
	}
	if len(p.Messages) < 20 {
		t.Fatal("no golden case with 20 messages")
	}
	full, err := BuildRequest(p, SummaryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	need := tokens.EstimateText(full.SystemPrompt) + tokens.EstimateText(full.Prompt)
	budget := need*2/3 + full.MaxTokens // the answer counts against the window
	req, err := BuildRequest(p, SummaryOptions{InputBudget: budget})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(req.Prompt, prompts.Branch+"\n\n"+prompts.Omitted) {
		t.Errorf("prompt does not end with the omission note:\n…%s", req.Prompt[max(0, len(req.Prompt)-300):])
	}
	if got := tokens.EstimateText(req.SystemPrompt) + tokens.EstimateText(req.Prompt); got+req.MaxTokens > budget {
		t.Errorf("request ~%d tokens + %d output, budget %d", got, req.MaxTokens, budget)
	}
}
