// Command enterprise-summarizer is an example Pith plugin for
// session_before_compact. It supplies the whole compaction itself so that no
// secret in the conversation reaches the summarizer model: it redacts API
// keys (sk-…, AKIA…, ghp_…, xox…), bearer tokens, JWTs, private-key blocks,
// passwords in URLs and e-mail addresses from the messages to summarize,
// builds the summarization prompt from the redacted conversation, and runs
// it on the host's configured summarizer through the host's API — the plugin
// holds no credentials and links no LLM client.
//
// It fails safe: on any problem (the completion fails, comes back empty or
// cut off by the output limit) it returns nothing, and the host runs its
// default compaction. It logs how many values of each kind it redacted,
// never the values.
//
//	plugins:
//	  - name: enterprise-summarizer
//	    path: ./bin/plugins/enterprise-summarizer
//	    timeout: 120s          # a model call: give it time
//	    failure: open          # on failure the default compaction runs
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/pith-dev/pith/sdk"
)

// defaultReserveTokens is used when the preparation carries no reserve
// (docs/behaviour.md §14's default).
const defaultReserveTokens = 16384

func main() {
	fs := flag.NewFlagSet("enterprise-summarizer", flag.ContinueOnError)
	s := &summarizer{}
	fs.IntVar(&s.maxInputChars, "max-input-chars", 400_000, "largest conversation sent to the summarizer, in characters; older messages are dropped beyond it")
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	if s.maxInputChars < 1000 {
		fmt.Fprintln(os.Stderr, "enterprise-summarizer: --max-input-chars must be at least 1000")
		os.Exit(2)
	}
	sdk.ServePlugin(sdk.ServeOpts{BeforeCompact: s}, sdk.WithName("enterprise-summarizer"), sdk.WithVersion("1.0.0"))
}

type summarizer struct {
	maxInputChars int
}

// BeforeCompact returns a compaction built from the redacted conversation,
// or nothing so that the default compaction runs.
func (s *summarizer) BeforeCompact(ctx context.Context, ev *sdk.BeforeCompactEvent) (*sdk.BeforeCompactResult, error) {
	log := sdk.Logger().With("session", ev.SessionID, "reason", ev.Reason)
	p := ev.Preparation
	if len(p.MessagesToSummarize) == 0 && len(p.TurnPrefixMessages) == 0 {
		return nil, nil
	}
	req, red, dropped, err := s.request(p, ev.CustomInstructions)
	if err != nil {
		log.Warn("cannot redact the conversation; leaving the compaction to the host", "error", err)
		return nil, nil
	}
	if red.total() > 0 {
		log.Info("redacted secrets before summarizing", append([]any{"total", red.total()}, red.logFields()...)...)
	}
	if dropped > 0 {
		log.Warn("conversation too large for the summarizer input; dropped older messages", "dropped", dropped)
	}
	resp, err := sdk.Host(ctx).Complete(ctx, req)
	switch {
	case err != nil:
		log.Warn("summarizer call failed; the host's default compaction runs", "error", err)
		return nil, nil
	case resp.FinishReason == "length":
		log.Warn("summary was cut off by the output limit; the host's default compaction runs", "model", resp.Model)
		return nil, nil
	case strings.TrimSpace(resp.Text) == "":
		log.Warn("summarizer returned an empty summary; the host's default compaction runs", "model", resp.Model)
		return nil, nil
	}
	// The model saw only redacted text, but may still produce something
	// that looks like a secret (an example key, an address it inferred).
	summary := newRedactor().text(strings.TrimSpace(resp.Text)) + fileBlocks(p.ReadFiles, p.ModifiedFiles)
	details, err := json.Marshal(map[string]any{
		"readFiles":     nonNil(p.ReadFiles),
		"modifiedFiles": nonNil(p.ModifiedFiles),
		"redactions":    red.counts,
	})
	if err != nil {
		return nil, fmt.Errorf("encode details: %w", err)
	}
	log.Info("compaction supplied", "model", resp.Model, "summary-chars", len(summary), "redacted", red.total())
	return &sdk.BeforeCompactResult{Compaction: &sdk.Compaction{
		Summary:          summary,
		FirstKeptEntryID: p.FirstKeptEntryID,
		TokensBefore:     p.TokensBefore,
		Details:          details,
	}}, nil
}

// request is the handler's own work before the model call: it redacts the
// conversation, the turn prefix, the previous summary and the custom
// instructions, and builds the summarizer request from them. It returns the
// redactor (for its counts) and how many older messages were dropped to fit
// the input limit.
func (s *summarizer) request(p sdk.Preparation, customInstructions string) (sdk.CompleteRequest, *redactor, int, error) {
	red := newRedactor()
	history, err := redactAll(red, p.MessagesToSummarize)
	if err != nil {
		return sdk.CompleteRequest{}, nil, 0, fmt.Errorf("conversation: %w", err)
	}
	prefix, err := redactAll(red, p.TurnPrefixMessages)
	if err != nil {
		return sdk.CompleteRequest{}, nil, 0, fmt.Errorf("turn prefix: %w", err)
	}
	previous := red.text(p.PreviousSummary)
	instructions := red.text(customInstructions)
	historyBlocks, err := serialize(history)
	if err != nil {
		return sdk.CompleteRequest{}, nil, 0, fmt.Errorf("conversation: %w", err)
	}
	prefixBlocks, err := serialize(prefix)
	if err != nil {
		return sdk.CompleteRequest{}, nil, 0, fmt.Errorf("turn prefix: %w", err)
	}
	conversation, dropped := fit(historyBlocks, s.maxInputChars)
	reserve := p.ReserveTokens
	if reserve <= 0 {
		reserve = defaultReserveTokens
	}
	req := sdk.CompleteRequest{
		SystemPrompt: systemPrompt,
		Prompt:       buildPrompt(conversation, prefixBlocks, previous, instructions, dropped),
		MaxTokens:    reserve * 8 / 10,
	}
	return req, red, dropped, nil
}

func redactAll(red *redactor, messages []json.RawMessage) ([]json.RawMessage, error) {
	out := make([]json.RawMessage, len(messages))
	for i, m := range messages {
		r, err := red.message(m)
		if err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
		out[i] = r
	}
	return out, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
