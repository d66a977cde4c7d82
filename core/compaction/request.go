package compaction

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/pith-dev/pith/core/prompts"
	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/core/summary"
	"github.com/pith-dev/pith/core/tokens"
	"github.com/pith-dev/pith/core/transcript"
)

// TurnContextSeparator joins the history summary and the turn-prefix
// summary of a split turn.
const TurnContextSeparator = "\n\n---\n\n**Turn Context (split turn):**\n\n"

// NoPriorHistory stands in for the history summary of a split turn when
// nothing precedes the turn.
const NoPriorHistory = "No prior history."

// RequestOptions shape the summary requests.
type RequestOptions struct {
	// ContextLines come from plugins (session.compacting), one per line.
	ContextLines []string
	// Prompt, when set by a plugin, replaces the base prompt.
	Prompt string
	// Instructions are the user's focus for a manual compaction.
	Instructions string
	// ModelOutputLimit is the summarizer model's own output cap (0: none).
	ModelOutputLimit int
	// InputBudget is the summarizer model's context window in tokens for
	// one request: system prompt, prompt and the output cap together
	// (0: no limit).
	InputBudget int
	// Reasoning is passed through to the requests.
	Reasoning string
	// ShortSummary asks for a 2–3 sentence summary as well.
	ShortSummary bool
}

// Requests are the summarizer calls of one compaction.
type Requests struct {
	History summary.Request
	// SkipHistory is true when a split turn has nothing before it: the
	// history part is then HistoryText and History is not sent.
	SkipHistory bool
	HistoryText string
	// TurnPrefix is set for a split turn with a non-empty prefix.
	TurnPrefix *summary.Request
	// Omitted* say how much of the history conversation was left out to fit
	// the input budget (0 when everything fitted).
	OmittedMessages int
	OmittedTokens   int
	// ShortMaxTokens is the cap of the short summary request, 0 when none
	// was asked for; see ShortSummaryRequest.
	ShortMaxTokens int
}

// Output caps of docs/behaviour.md §7 as fractions of reserveTokens.
func historyCap(reserve int) int    { return reserve * 8 / 10 }
func turnPrefixCap(reserve int) int { return reserve / 2 }
func shortCap(reserve int) int      { return min(512, reserve*2/10) }

func clampOutput(n, limit int) int {
	if limit > 0 && n > limit {
		n = limit
	}
	return max(1, n)
}

// BuildSummaryRequests assembles the summarizer requests for prep (docs/behaviour.md §7).
// It fails with ErrInputTooLarge when a request cannot fit opts.InputBudget
// even after leaving out the middle of the conversation.
func BuildSummaryRequests(prep *Preparation, opts RequestOptions) (*Requests, error) {
	reserve := prep.Settings.ReserveTokens
	out := &Requests{}
	splitPrefix := prep.Cut.IsSplitTurn && len(prep.TurnPrefixMessages) > 0

	if splitPrefix && len(prep.MessagesToSummarize) == 0 {
		out.SkipHistory = true
		out.HistoryText = NoPriorHistory
		if prep.PreviousSummary != "" {
			// The reference writes "No prior history." here and so loses the
			// previous summary; keeping it is what the user expects.
			out.HistoryText = prep.PreviousSummary
		}
	} else {
		base := prompts.Initial
		if prep.PreviousSummary != "" {
			base = prompts.Update
		}
		if opts.Prompt != "" {
			base = opts.Prompt
		}
		var tail strings.Builder
		if prep.PreviousSummary != "" {
			tail.WriteString("<previous-summary>\n" + prep.PreviousSummary + "\n</previous-summary>\n\n")
		}
		if len(opts.ContextLines) > 0 {
			tail.WriteString("<additional-context>\n")
			for _, l := range opts.ContextLines {
				tail.WriteString("- " + l + "\n")
			}
			tail.WriteString("</additional-context>\n\n")
		}
		tail.WriteString(base)
		focus := ""
		if opts.Instructions != "" {
			focus = "\n\nAdditional focus: " + opts.Instructions
		}
		omittedNote := "\n\n" + prompts.Omitted
		fixed := tokens.EstimateText(prompts.System) + tokens.EstimateText("<conversation>\n\n</conversation>\n\n"+tail.String()+omittedNote+focus)
		maxTokens := clampOutput(historyCap(reserve), opts.ModelOutputLimit)
		conv, err := fitBudget(prep.MessagesToSummarize, opts.InputBudget, fixed, maxTokens, "history")
		if err != nil {
			return nil, err
		}
		prompt := "<conversation>\n" + conv.Text + "\n</conversation>\n\n" + tail.String()
		if conv.OmittedMessages > 0 {
			prompt += omittedNote
		}
		prompt += focus
		out.OmittedMessages, out.OmittedTokens = conv.OmittedMessages, conv.OmittedTokens
		out.History = summary.Request{
			Purpose:      summary.PurposeHistory,
			SystemPrompt: prompts.System,
			Prompt:       prompt,
			MaxTokens:    maxTokens,
			Reasoning:    opts.Reasoning,
			Source: &summary.Transcript{
				Messages:        prep.MessagesToSummarize,
				PreviousSummary: prep.PreviousSummary,
				ContextLines:    opts.ContextLines,
				Instructions:    opts.Instructions,
				ReadFiles:       prep.ReadFiles,
				ModifiedFiles:   prep.ModifiedFiles,
			},
		}
	}

	if splitPrefix {
		omittedNote := "\n\n" + prompts.Omitted
		fixed := tokens.EstimateText(prompts.System) + tokens.EstimateText("<conversation>\n\n</conversation>\n\n"+prompts.TurnPrefix+omittedNote)
		maxTokens := clampOutput(turnPrefixCap(reserve), opts.ModelOutputLimit)
		conv, err := fitBudget(prep.TurnPrefixMessages, opts.InputBudget, fixed, maxTokens, "turn prefix")
		if err != nil {
			return nil, err
		}
		prompt := "<conversation>\n" + conv.Text + "\n</conversation>\n\n" + prompts.TurnPrefix
		if conv.OmittedMessages > 0 {
			prompt += omittedNote
		}
		out.TurnPrefix = &summary.Request{
			Purpose:      summary.PurposeTurnPrefix,
			SystemPrompt: prompts.System,
			Prompt:       prompt,
			MaxTokens:    maxTokens,
			Reasoning:    opts.Reasoning,
			Source:       &summary.Transcript{Messages: prep.TurnPrefixMessages},
		}
	}
	if opts.ShortSummary {
		out.ShortMaxTokens = clampOutput(shortCap(reserve), opts.ModelOutputLimit)
	}
	return out, nil
}

// fitBudget clips the conversation so that the request's estimated input
// (fixed + conversation) plus its output cap maxOut fits the window budget:
// an OpenAI-style API rejects input + max_tokens > window.
func fitBudget(msgs []session.Message, budget, fixed, maxOut int, what string) (transcript.Fitted, error) {
	conv := 0
	if budget > 0 {
		conv = budget - maxOut - fixed
		if conv <= 0 {
			return transcript.Fitted{}, fmt.Errorf("%s summary: %w: the prompt alone needs ~%d tokens + %d for the answer, of %d", what, transcript.ErrInputTooLarge, fixed, maxOut, budget)
		}
	}
	f, err := transcript.FitConversation(msgs, conv)
	if err != nil {
		return transcript.Fitted{}, fmt.Errorf("%s summary: %w", what, err)
	}
	return f, nil
}

// ShortSummaryRequest asks for the 2–3 sentence version of a finished
// summary. For summarizers that read Source, the summary to shorten is in
// Transcript.PreviousSummary.
func ShortSummaryRequest(text string, maxTokens int, reasoning string) summary.Request {
	return summary.Request{
		Purpose:      summary.PurposeShort,
		SystemPrompt: prompts.System,
		Prompt:       "<summary>\n" + text + "\n</summary>\n\n" + prompts.Short,
		MaxTokens:    maxTokens,
		Reasoning:    reasoning,
		Source:       &summary.Transcript{PreviousSummary: text},
	}
}

// Details is what a compaction stores in its details field.
type Details struct {
	ReadFiles     []string `json:"readFiles"`
	ModifiedFiles []string `json:"modifiedFiles"`
	// Reason is why the compaction ran (manual, threshold, overflow);
	// HookTimeline is the plugin calls of the run as a JSON array. The
	// engine fills both; pi reads neither.
	Reason       string          `json:"reason,omitempty"`
	HookTimeline json.RawMessage `json:"hookTimeline,omitempty"`
}

// Result is a generated compaction, ready to persist.
type Result struct {
	Summary          string
	ShortSummary     string
	FirstKeptEntryID string
	TokensBefore     int
	Details          Details
	// RawDetails, when set, is stored as details instead of Details: the
	// details a plugin supplied with its own compaction.
	RawDetails json.RawMessage
	// ShortSummaryErr is why the optional short summary is missing; the
	// compaction itself does not fail for it.
	ShortSummaryErr error
	// Usage adds up what the summarizer calls reported.
	Usage summary.Usage
	// OmittedMessages is how many history messages were left out to fit the
	// summarizer's window.
	OmittedMessages int
}

// Generate runs the summary requests of prep on s (docs/behaviour.md §7): history and
// turn prefix concurrently (an error or ctx cancellation stops both), then
// joins them, appends the file lists, and optionally asks for the short
// summary. Every answer is validated; an invalid one fails the compaction
// with ErrInvalidSummary and nothing is returned to save.
func Generate(ctx context.Context, s summary.Summarizer, prep *Preparation, opts RequestOptions) (*Result, error) {
	reqs, err := BuildSummaryRequests(prep, opts)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	var (
		wg                sync.WaitGroup
		history, prefix   summary.Result
		historyErr, prErr error
	)
	if !reqs.SkipHistory {
		wg.Go(func() {
			history, historyErr = call(ctx, s, reqs.History, "history summary")
			if historyErr != nil {
				cancel()
			}
		})
	}
	if reqs.TurnPrefix != nil {
		wg.Go(func() {
			prefix, prErr = call(ctx, s, *reqs.TurnPrefix, "turn-prefix summary")
			if prErr != nil {
				cancel()
			}
		})
	}
	wg.Wait()
	// Report the error that caused the other call's cancellation, not the
	// cancellation itself.
	if err := firstCause(historyErr, prErr); err != nil {
		return nil, err
	}

	summary := reqs.HistoryText
	if !reqs.SkipHistory {
		summary = history.Text
	}
	if reqs.TurnPrefix != nil {
		summary += TurnContextSeparator + prefix.Text
	}
	summary += transcript.FormatFileOperations(prep.ReadFiles, prep.ModifiedFiles)

	res := &Result{
		Summary:          summary,
		FirstKeptEntryID: prep.FirstKeptEntryID,
		TokensBefore:     prep.TokensBefore,
		Details:          Details{ReadFiles: nonNil(prep.ReadFiles), ModifiedFiles: nonNil(prep.ModifiedFiles)},
		Usage:            addUsage(history.Usage, prefix.Usage),
		OmittedMessages:  reqs.OmittedMessages,
	}
	if reqs.ShortMaxTokens > 0 {
		short, err := call(ctx, s, ShortSummaryRequest(summary, reqs.ShortMaxTokens, opts.Reasoning), "short summary")
		switch {
		case err == nil:
			res.ShortSummary = short.Text
			res.Usage = addUsage(res.Usage, short.Usage)
		case ctx.Err() != nil:
			return nil, err
		default:
			res.ShortSummaryErr = err
		}
	}
	return res, nil
}

// call runs one request and validates the answer.
func call(ctx context.Context, s summary.Summarizer, req summary.Request, what string) (summary.Result, error) {
	res, err := s.Summarize(ctx, req)
	if err != nil {
		return res, fmt.Errorf("%s: %w", what, err)
	}
	if err := summary.Validate(res, req.MaxTokens); err != nil {
		return res, fmt.Errorf("%s: %w", what, err)
	}
	res.Text = strings.TrimSpace(res.Text)
	return res, nil
}

func firstCause(errs ...error) error {
	var cancelled error
	for _, err := range errs {
		if err == nil {
			continue
		}
		if errors.Is(err, context.Canceled) {
			if cancelled == nil {
				cancelled = err
			}
			continue
		}
		return err
	}
	return cancelled
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func addUsage(a, b summary.Usage) summary.Usage {
	return summary.Usage{Input: a.Input + b.Input, Output: a.Output + b.Output,
		CacheRead: a.CacheRead + b.CacheRead, CacheWrite: a.CacheWrite + b.CacheWrite}
}

// summarizeResult wraps text as a finished summarizer answer.
func summarizeResult(text string) summary.Result {
	return summary.Result{Text: text, FinishReason: summary.FinishStop}
}
