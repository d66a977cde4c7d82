package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/core/tokens"
	"github.com/pith-dev/pith/core/transcript"
	"github.com/pith-dev/pith/internal/entryview"
	"github.com/pith-dev/pith/internal/termsafe"
	"github.com/spf13/cobra"
)

func newContextCommand() *cobra.Command {
	var (
		leaf   string
		asJSON bool
		llm    bool
		window int
		// storeURL, with --store, reads the session from a store.
		storeURL string
	)
	cmd := &cobra.Command{
		Use:   "context FILE | --store URL NAME",
		Short: "Show the context that would be sent to the model",
		Long: `Builds the context of a session (docs/behaviour.md §2) for its current leaf, or for --leaf,
and counts its tokens (docs/behaviour.md §3): the last valid usage plus estimates of the
messages after it.

--llm prints the messages converted for a model, as one JSON object
{"messages": [...], "tokens", "model", "thinkingLevel", "leafId"}: summaries,
custom messages and bash runs become user messages (see docs/cli.md, "LLM-ready
context"), so an agent can send the list as it is.`,
		Args: positional([]arg{sessionArg}),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := args[0]
			// The table shows every message's estimate: measured while the
			// lines are scanned, as a dry run does, rather than in a pass
			// of its own afterwards.
			table := !llm && !asJSON
			_, tree, err := loadReadOnly(cmd.Context(), cmd.ErrOrStderr(), storeURL, path, session.LoadOptions{ParseOptions: session.ParseOptions{Estimates: table}})
			if err != nil {
				return err
			}
			leafID, err := leafFor(path, tree, leaf)
			if err != nil {
				return err
			}
			ctx := tree.BuildContext(leafID)
			session.LogWarnings(warnLogger(cmd.ErrOrStderr()), path, session.PathCycleWarnings(tree, ctx.Path))
			est := tokens.ContextSince(len(ctx.Messages), func(i int) []byte { return ctx.Messages[i].Raw }, ctx.SinceCompaction)
			if llm {
				return writeLLMContextJSON(cmd.OutOrStdout(), ctx, est)
			}
			if asJSON {
				return writeContextJSON(cmd.OutOrStdout(), ctx, est)
			}
			return writeContextTable(cmd.OutOrStdout(), tree, ctx, est, window)
		},
	}
	cmd.Flags().StringVar(&leaf, "leaf", "", "build the context for this entry id instead of the current leaf")
	completeEntryFlag(cmd, "leaf")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	cmd.Flags().BoolVar(&llm, "llm", false, "print the messages converted for a model, as JSON (implies --json)")
	cmd.Flags().IntVar(&window, "window", 200000, "the model's context window, for the total")
	addStoreFlag(cmd, &storeURL)
	return cmd
}

type contextJSON struct {
	Messages      int               `json:"messages"`
	Roles         []string          `json:"roles"`
	Tokens        int               `json:"tokens"`
	Model         *session.ModelRef `json:"model"`
	ThinkingLevel string            `json:"thinkingLevel"`
	LeafID        string            `json:"leafId"`
}

func writeContextJSON(w io.Writer, ctx session.Context, est tokens.ContextEstimate) error {
	out := contextJSON{
		Messages:      len(ctx.Messages),
		Roles:         make([]string, len(ctx.Messages)),
		Tokens:        est.Tokens,
		Model:         ctx.Model,
		ThinkingLevel: ctx.ThinkingLevel,
	}
	for i, m := range ctx.Messages {
		out.Roles[i] = m.Role
	}
	if ctx.Leaf != nil {
		out.LeafID = ctx.Leaf.ID
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(out)
}

type llmContextJSON struct {
	Messages      []json.RawMessage `json:"messages"`
	Tokens        int               `json:"tokens"`
	Model         *session.ModelRef `json:"model"`
	ThinkingLevel string            `json:"thinkingLevel"`
	LeafID        string            `json:"leafId"`
}

func writeLLMContextJSON(w io.Writer, ctx session.Context, est tokens.ContextEstimate) error {
	out := llmContextJSON{
		Messages:      transcript.ConvertForLLM(ctx.Messages),
		Tokens:        est.Tokens,
		Model:         ctx.Model,
		ThinkingLevel: ctx.ThinkingLevel,
	}
	if ctx.Leaf != nil {
		out.LeafID = ctx.Leaf.ID
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(out)
}

func writeContextTable(out io.Writer, tree *session.Tree, ctx session.Context, est tokens.ContextEstimate, window int) error {
	// tabwriter writes a line at a time: buffered, not a write each.
	w := bufio.NewWriterSize(out, 64<<10)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tROLE\tTOKENS\tMESSAGE")
	for i, m := range ctx.Messages {
		// Session text, escaped for the terminal (termsafe); a tab would
		// shift the columns.
		fmt.Fprintf(tw, "%d\t%s\t%d\t%s\n", i+1, cell(m.Role), messageTokens(tree, m), cell(entryview.Preview(m, 80)))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	model := "none"
	if ctx.Model != nil {
		model = termsafe.Line(ctx.Model.Provider + "/" + ctx.Model.ModelID)
	}
	fmt.Fprintf(w, "\n%d messages · model %s · thinking %s\n", len(ctx.Messages), model, termsafe.Line(ctx.ThinkingLevel))
	how := "estimated"
	if est.LastUsageIndex >= 0 {
		how = fmt.Sprintf("usage of message %d + %d estimated after it", est.LastUsageIndex+1, est.TrailingTokens)
	}
	pct := 0.0
	if window > 0 {
		pct = 100 * float64(est.Tokens) / float64(window)
	}
	fmt.Fprintf(w, "context: %d / %d tokens (%.1f%%; %s)\n", est.Tokens, window, pct, how)
	return w.Flush()
}

// messageTokens is tokens.Estimate of m: the one its entry keeps (measured
// while the file was scanned) when m is that entry's own message, else
// measured now (a compaction's summary, built for the context).
func messageTokens(tree *session.Tree, m session.Message) int {
	if e := tree.Get(m.EntryID); e != nil {
		if own, ok := session.EntryMessage(e); ok && len(own.Raw) == len(m.Raw) && len(m.Raw) > 0 && &own.Raw[0] == &m.Raw[0] {
			return e.EntryMessageTokens()
		}
	}
	return tokens.Estimate(m.Raw)
}

// cell is a table cell of session text: escaped as termsafe.Line, and its
// tabs, which tabwriter would take for column breaks, as spaces.
func cell(s string) string { return strings.ReplaceAll(termsafe.Line(s), "\t", " ") }
