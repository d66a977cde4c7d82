package branch

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/pith-dev/pith/core/prompts"
	"github.com/pith-dev/pith/core/summary"
	"github.com/pith-dev/pith/core/tokens"
	"github.com/pith-dev/pith/core/transcript"
)

// SummaryMaxTokens is the output cap of a branch summary (docs/behaviour.md §11.3).
const SummaryMaxTokens = 2048

// ErrNothingToSummarize is returned when the prepared branch holds no
// message: no request is sent and no summary entry is written (the
// reference saves "No content to summarize" instead).
var ErrNothingToSummarize = errors.New("nothing to summarize on the branch")

// ErrNoSummarizer is returned when a summary must be generated and no
// summarizer was given.
var ErrNoSummarizer = errors.New("no summarizer configured")

// ErrInvalidSummary is summary.ErrInvalidSummary: the summarizer's answer
// was empty, cut off by the output cap, or over it, and was not saved.
var ErrInvalidSummary = summary.ErrInvalidSummary

// SummaryOptions shape a branch summary request.
type SummaryOptions struct {
	// CustomInstructions are added to the prompt as an extra focus, or
	// replace it when ReplaceInstructions is set.
	CustomInstructions  string
	ReplaceInstructions bool
	// ModelOutputLimit is the summarizer model's own output cap (0: none);
	// the request asks for at most min(SummaryMaxTokens, ModelOutputLimit).
	ModelOutputLimit int
	// InputBudget is the summarizer's context window in tokens for the
	// whole request: system prompt, prompt and the output cap (0: no
	// limit). When the conversation
	// does not fit, its oldest middle part is left out and the prompt says
	// so; a request that cannot fit at all is never sent.
	InputBudget int
	// Reasoning is passed through to the request.
	Reasoning string
}

// Details is what a generated branch summary stores in its details field;
// later branch summaries and compactions read the lists back.
type Details struct {
	ReadFiles     []string `json:"readFiles"`
	ModifiedFiles []string `json:"modifiedFiles"`
}

// BuildRequest assembles the summarizer request for a prepared branch:
// the serialized conversation in <conversation> tags, then the branch
// prompt (with "Additional focus: …", or replaced by the custom
// instructions), the shared system prompt, the 2048-token cap, and the
// structured Transcript for summarizers that read it.
func BuildRequest(p Prepared, opts SummaryOptions) (summary.Request, error) {
	if len(p.Messages) == 0 {
		return summary.Request{}, ErrNothingToSummarize
	}
	instructions := prompts.Branch
	switch {
	case opts.ReplaceInstructions && opts.CustomInstructions != "":
		instructions = opts.CustomInstructions
	case opts.CustomInstructions != "":
		instructions += "\n\nAdditional focus: " + opts.CustomInstructions
	}
	maxTokens := SummaryMaxTokens
	if opts.ModelOutputLimit > 0 && opts.ModelOutputLimit < maxTokens {
		maxTokens = opts.ModelOutputLimit
	}
	omittedNote := "\n\n" + prompts.Omitted
	conv := 0
	if opts.InputBudget > 0 {
		fixed := tokens.EstimateText(prompts.System) +
			tokens.EstimateText("<conversation>\n\n</conversation>\n\n"+instructions+omittedNote)
		// The answer's tokens count against the window too.
		conv = opts.InputBudget - maxTokens - fixed
		if conv <= 0 {
			return summary.Request{}, fmt.Errorf("branch summary: %w: the prompt alone needs ~%d tokens + %d for the answer, of %d",
				transcript.ErrInputTooLarge, fixed, maxTokens, opts.InputBudget)
		}
	}
	fitted, err := transcript.FitConversation(p.Messages, conv)
	if err != nil {
		return summary.Request{}, fmt.Errorf("branch summary: %w", err)
	}
	prompt := "<conversation>\n" + fitted.Text + "\n</conversation>\n\n" + instructions
	if fitted.OmittedMessages > 0 {
		prompt += omittedNote
	}
	return summary.Request{
		Purpose:      summary.PurposeBranch,
		SystemPrompt: prompts.System,
		Prompt:       prompt,
		MaxTokens:    maxTokens,
		Reasoning:    opts.Reasoning,
		Source: &summary.Transcript{
			Messages:      p.Messages,
			Instructions:  opts.CustomInstructions,
			ReadFiles:     p.ReadFiles,
			ModifiedFiles: p.ModifiedFiles,
		},
	}, nil
}

// GenerateSummary asks s for a summary of the prepared branch and returns
// the text to store: the fixed preamble (the user explored another branch
// before coming back), the model's summary, and the <read-files> and
// <modified-files> blocks; plus the details holding the file lists.
//
// The answer is validated as a compaction summary is (docs/behaviour.md §7): empty, cut
// off by the output cap, or over it → an error wrapping ErrInvalidSummary.
// ErrNothingToSummarize when p has no message. Cancelling ctx aborts the
// request; the error then wraps ctx.Err().
func GenerateSummary(ctx context.Context, s summary.Summarizer, p Prepared, opts SummaryOptions) (text string, details Details, err error) {
	req, err := BuildRequest(p, opts)
	if err != nil {
		return "", Details{}, err
	}
	if s == nil {
		return "", Details{}, fmt.Errorf("branch summary: %w", ErrNoSummarizer)
	}
	res, err := s.Summarize(ctx, req)
	if err == nil {
		err = ctx.Err() // a summarizer that ignored the abort must not win
	}
	if err != nil {
		return "", Details{}, fmt.Errorf("branch summary: %w", err)
	}
	if err := summary.Validate(res, req.MaxTokens); err != nil {
		return "", Details{}, fmt.Errorf("branch summary: %w", err)
	}
	text = prompts.BranchPreamble + strings.TrimSpace(res.Text) +
		transcript.FormatFileOperations(p.ReadFiles, p.ModifiedFiles)
	return text, Details{ReadFiles: nonNilList(p.ReadFiles), ModifiedFiles: nonNilList(p.ModifiedFiles)}, nil
}

func nonNilList(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
