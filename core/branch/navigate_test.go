package branch

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/pith-dev/pith/core/prompts"
	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/core/summary"
	"github.com/pith-dev/pith/summarize"
	"github.com/pith-dev/pith/summarize/builtin"
	"github.com/tidwall/gjson"
)

// TestNavigateWithoutSummary covers where the leaf goes, what the editor
// gets, and that the navigated leaf survives reopening the file.
func TestNavigateWithoutSummary(t *testing.T) {
	tests := []struct {
		name       string
		target     string
		label      string
		position   string // "" = before the first entry
		editorText string
		hasEditor  bool
		appended   []string // types of the appended entries
	}{
		{name: "assistant on an abandoned branch", target: "000000a2", position: "000000a2", appended: []string{"custom"}},
		{name: "tool result", target: "000000r2", position: "000000r2", appended: []string{"custom"}},
		{name: "user message", target: "000000u2", position: "000000a1", editorText: "first attempt", hasEditor: true, appended: []string{"custom"}},
		{name: "user message with blocks", target: "000000u3", position: "000000a1", editorText: "second attempt", hasEditor: true, appended: []string{"custom"}},
		{name: "custom_message", target: "000000cm", position: "000000a1", editorText: "custom text", hasEditor: true, appended: []string{"custom"}},
		{name: "ancestor on the current path", target: "000000a1", position: "000000a1", appended: []string{"custom"}},
		{name: "root user message", target: "000000u1", position: "", editorText: "hello", hasEditor: true, appended: []string{"custom"}},
		{name: "with a label", target: "000000a2", label: "retry here", position: "000000a2", appended: []string{"label"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeSession(t, treeLines)
			store := openStore(t, path)
			var before []BeforeTreeEvent
			var after []AfterTreeEvent
			res, err := Navigate(context.Background(), store, tt.target, NavigateOptions{
				Label:      tt.label,
				Summarizer: failingSummarizer(t),
				BeforeTree: func(_ context.Context, ev BeforeTreeEvent) (BeforeTreeResult, error) {
					before = append(before, ev)
					return BeforeTreeResult{}, nil
				},
				AfterTree: func(_ context.Context, ev AfterTreeEvent) { after = append(after, ev) },
			})
			if err != nil {
				t.Fatal(err)
			}
			if res.NoOp || res.PositionID != tt.position || res.OldLeafID != "000000a3" {
				t.Errorf("result %+v, want position %q from 000000a3", res, tt.position)
			}
			if res.EditorText != tt.editorText || res.HasEditorText != tt.hasEditor {
				t.Errorf("editor text %q (%v), want %q (%v)", res.EditorText, res.HasEditorText, tt.editorText, tt.hasEditor)
			}
			if res.SummaryEntry != nil {
				t.Error("a summary entry was written without being asked for")
			}
			if len(before) != 1 || before[0].UserWantsSummary || before[0].TargetID != tt.target || before[0].Label != tt.label {
				t.Errorf("session_before_tree events %+v", before)
			}
			if len(after) != 1 || after[0].NewLeafID != res.NewLeafID || after[0].OldLeafID != "000000a3" || after[0].SummaryEntry != nil {
				t.Errorf("session_tree events %+v", after)
			}

			tree := store.Tree()
			appended := tree.Entries[len(treeLines)-1:]
			var types []string
			for _, e := range appended {
				types = append(types, e.Type)
			}
			if !slices.Equal(types, tt.appended) {
				t.Fatalf("appended %v, want %v", types, tt.appended)
			}
			first := appended[0]
			if first.ParentID != tt.position {
				t.Errorf("appended entry's parent %q, want %q", first.ParentID, tt.position)
			}
			switch first.Type {
			case session.TypeCustom:
				if first.Get("customType").String() != LeafMarkerType || first.Get("data.targetId").String() != tt.target || res.MarkerEntry != first {
					t.Errorf("leaf marker %s", first.Raw)
				}
			case session.TypeLabel:
				if first.Get("targetId").String() != tt.target || first.Get("label").String() != tt.label || res.LabelEntry != first {
					t.Errorf("label entry %s", first.Raw)
				}
			}
			if store.Leaf() != tree.Last() || res.NewLeafID != tree.Last().ID {
				t.Errorf("leaf %v, want the appended %s", store.Leaf(), tree.Last().ID)
			}
			want := contextOf(tree, tt.position)
			if got := contextOf(tree, res.NewLeafID); !slices.Equal(got, want) {
				t.Errorf("context at the new leaf:\n%q\nwant the context at %q:\n%q", got, tt.position, want)
			}

			// Reopening restores the navigated leaf.
			again := openStore(t, path)
			if leafID(again) != res.NewLeafID {
				t.Fatalf("reopened leaf %q, want %s", leafID(again), res.NewLeafID)
			}
			if got := contextOf(again.Tree(), again.Leaf().ID); !slices.Equal(got, want) {
				t.Errorf("reopened context:\n%q\nwant:\n%q", got, want)
			}
		})
	}
}

func TestNavigateNoOpAndUnknown(t *testing.T) {
	path := writeSession(t, treeLines)
	store := openStore(t, path)
	before := readFile(t, path)
	hook := func(context.Context, BeforeTreeEvent) (BeforeTreeResult, error) {
		t.Error("session_before_tree emitted for a navigation that does nothing")
		return BeforeTreeResult{}, nil
	}

	res, err := Navigate(context.Background(), store, "000000a3", NavigateOptions{Summarize: true, BeforeTree: hook})
	if err != nil {
		t.Fatal(err)
	}
	if !res.NoOp || res.NewLeafID != "000000a3" {
		t.Errorf("navigating to the current leaf: %+v", res)
	}

	_, err = Navigate(context.Background(), store, "deadbeef", NavigateOptions{BeforeTree: hook})
	if !errors.Is(err, ErrUnknownEntry) || !strings.Contains(err.Error(), `"deadbeef"`) {
		t.Errorf("unknown target: %v", err)
	}
	sameBytes(t, path, before)
	if leafID(store) != "000000a3" {
		t.Errorf("leaf moved to %q", leafID(store))
	}
}

// TestNavigateWithSummary summarizes branch C (u3, a3) when going to a2.
func TestNavigateWithSummary(t *testing.T) {
	tests := []struct {
		name         string
		instructions string
		replace      bool
		label        string
		wantPrompt   string
	}{
		{name: "plain", wantPrompt: prompts.Branch},
		{name: "focus", instructions: "the z package", wantPrompt: prompts.Branch + "\n\nAdditional focus: the z package"},
		{name: "replace", instructions: "Just list the files.", replace: true, wantPrompt: "Just list the files."},
		{name: "label", label: "second try", wantPrompt: prompts.Branch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeSession(t, treeLines)
			store := openStore(t, path)
			s := &fixedSummarizer{text: "  ## Goal\nWrite z.go.\n"}
			var after AfterTreeEvent
			res, err := Navigate(context.Background(), store, "000000a2", NavigateOptions{
				Summarize: true, CustomInstructions: tt.instructions, ReplaceInstructions: tt.replace,
				Label: tt.label, Summarizer: s,
				AfterTree: func(_ context.Context, ev AfterTreeEvent) { after = ev },
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(s.reqs) != 1 {
				t.Fatalf("%d summarizer calls", len(s.reqs))
			}
			req := s.reqs[0]
			if req.Purpose != summary.PurposeBranch || req.MaxTokens != SummaryMaxTokens || req.SystemPrompt != prompts.System {
				t.Errorf("request %s, %d tokens", req.Purpose, req.MaxTokens)
			}
			if !strings.HasPrefix(req.Prompt, "<conversation>\n[User]: second attempt\n\n[Assistant]: writing it\n\n[Assistant tool calls]: write(") ||
				!strings.HasSuffix(req.Prompt, "\n</conversation>\n\n"+tt.wantPrompt) {
				t.Errorf("prompt:\n%s", req.Prompt)
			}
			tr, ok := req.Source.(*summary.Transcript)
			if !ok || len(tr.Messages) != 2 || tr.Instructions != tt.instructions || !slices.Equal(tr.ModifiedFiles, []string{"/repo/z.go"}) {
				t.Errorf("transcript %+v", req.Source)
			}

			e := res.SummaryEntry
			if e == nil {
				t.Fatal("no summary entry")
			}
			wantSummary := prompts.BranchPreamble + "## Goal\nWrite z.go." + "\n\n<modified-files>\n/repo/z.go\n</modified-files>"
			if e.ParentID != "000000a2" || e.Get("fromId").String() != "000000a3" || e.Get("summary").String() != wantSummary ||
				e.Get("fromHook").Bool() || e.Get("details").Raw != `{"readFiles":[],"modifiedFiles":["/repo/z.go"]}` {
				t.Errorf("summary entry %s", e.Raw)
			}
			if res.FromHook || after.SummaryEntry != e || after.FromExtension || after.NewLeafID != res.NewLeafID {
				t.Errorf("result %+v, session_tree %+v", res, after)
			}
			if tt.label != "" {
				// On the summary entry, as pi 0.73.1 does (the SDK's
				// session_before_tree label too).
				if res.LabelEntry == nil || res.LabelEntry.ParentID != e.ID || res.LabelEntry.Get("targetId").String() != e.ID ||
					res.LabelEntry.Get("label").String() != tt.label {
					t.Errorf("label entry %s, want a label of the summary entry %s", res.LabelEntry.Raw, e.ID)
				}
			} else if res.LabelEntry != nil || res.MarkerEntry != nil {
				t.Errorf("unexpected entries: label %v, marker %v", res.LabelEntry, res.MarkerEntry)
			}

			// The context continues from a2 (its tool result is on the branch
			// left behind) with the summary after it.
			again := openStore(t, path)
			if leafID(again) != res.NewLeafID {
				t.Fatalf("reopened leaf %q, want %s", leafID(again), res.NewLeafID)
			}
			ctx := again.Tree().BuildContext(again.Leaf().ID)
			roles := []string{}
			for _, m := range ctx.Messages {
				roles = append(roles, m.Role)
			}
			if want := []string{"user", "assistant", "user", "assistant", "branchSummary"}; !slices.Equal(roles, want) {
				t.Errorf("context roles %v, want %v", roles, want)
			}
		})
	}
}

func TestNavigateHooks(t *testing.T) {
	str := func(s string) *string { return &s }
	yes := true
	tests := []struct {
		name      string
		summarize bool
		result    BeforeTreeResult
		hookErr   error
		wantErr   error
		// wantSummary is the stored summary ("" = no entry); wantPrompt a
		// suffix of the summarizer's prompt when it is called.
		wantSummary string
		wantHook    bool
		wantPrompt  string
		wantLabel   string
	}{
		{name: "cancel without summary", result: BeforeTreeResult{Cancel: true}, wantErr: ErrCancelled},
		{name: "cancel with summary", summarize: true, result: BeforeTreeResult{Cancel: true}, wantErr: ErrCancelled},
		{name: "hook error", summarize: true, hookErr: errors.New("plugin audit failed closed"), wantErr: errors.New("plugin audit failed closed")},
		{name: "supplied summary", summarize: true,
			result:      BeforeTreeResult{Summary: &SuppliedSummary{Summary: "from the plugin", Details: []byte(`{"k":1}`)}},
			wantSummary: "from the plugin", wantHook: true},
		{name: "supplied summary but none wanted",
			result: BeforeTreeResult{Summary: &SuppliedSummary{Summary: "from the plugin"}}},
		{name: "overrides", summarize: true,
			result:      BeforeTreeResult{CustomInstructions: str("only files"), ReplaceInstructions: &yes, Label: str("hooked")},
			wantSummary: prompts.BranchPreamble + "generated" + "\n\n<modified-files>\n/repo/z.go\n</modified-files>",
			wantPrompt:  "\n</conversation>\n\nonly files", wantLabel: "hooked"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeSession(t, treeLines)
			store := openStore(t, path)
			before := readFile(t, path)
			s := &fixedSummarizer{text: "generated"}
			var ev BeforeTreeEvent
			res, err := Navigate(context.Background(), store, "000000a2", NavigateOptions{
				Summarize: tt.summarize, Summarizer: s, CustomInstructions: "focus", Label: "mine",
				BeforeTree: func(_ context.Context, e BeforeTreeEvent) (BeforeTreeResult, error) {
					ev = e
					return tt.result, tt.hookErr
				},
			})
			if ev.TargetID != "000000a2" || ev.OldLeafID != "000000a3" || ev.CommonAncestorID != "000000a1" ||
				!slices.Equal(entryIDs(ev.Entries), []string{"000000u3", "000000a3"}) || ev.UserWantsSummary != tt.summarize ||
				ev.CustomInstructions != "focus" || ev.Label != "mine" {
				t.Errorf("session_before_tree event %+v", ev)
			}
			if tt.wantErr != nil {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr.Error()) || (tt.wantErr == ErrCancelled && !errors.Is(err, ErrCancelled)) {
					t.Errorf("error %v, want %v", err, tt.wantErr)
				}
				sameBytes(t, path, before)
				if leafID(store) != "000000a3" {
					t.Errorf("leaf moved to %q", leafID(store))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if res.SummaryEntry != nil {
				got = res.SummaryEntry.Get("summary").String()
				if res.SummaryEntry.Get("fromHook").Bool() != tt.wantHook || res.FromHook != tt.wantHook {
					t.Errorf("fromHook %s, want %v", res.SummaryEntry.Raw, tt.wantHook)
				}
				if tt.wantHook && res.SummaryEntry.Get("details").Raw != `{"k":1}` {
					t.Errorf("supplied details not stored: %s", res.SummaryEntry.Raw)
				}
			}
			if got != tt.wantSummary {
				t.Errorf("summary %q, want %q", got, tt.wantSummary)
			}
			if tt.wantHook && len(s.reqs) > 0 {
				t.Error("the summarizer was called although a hook supplied the summary")
			}
			if tt.wantPrompt != "" && (len(s.reqs) != 1 || !strings.HasSuffix(s.reqs[0].Prompt, tt.wantPrompt)) {
				t.Errorf("prompt does not end with %q: %v", tt.wantPrompt, s.reqs)
			}
			if tt.wantLabel != "" && (res.LabelEntry == nil || res.LabelEntry.Get("label").String() != tt.wantLabel) {
				t.Errorf("label entry %v, want label %q", res.LabelEntry, tt.wantLabel)
			}
		})
	}
}

// TestNavigateAbortMidSummary cancels the context while the summarizer is
// working: the navigation fails with the cancellation and neither the leaf
// nor the file changes.
func TestNavigateAbortMidSummary(t *testing.T) {
	path := writeSession(t, treeLines)
	store := openStore(t, path)
	before := readFile(t, path)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started := make(chan struct{})
	blocking := summary.Func(func(ctx context.Context, _ summary.Request) (summary.Result, error) {
		close(started)
		<-ctx.Done()
		return summary.Result{}, ctx.Err()
	})
	done := make(chan error, 1)
	go func() {
		_, err := Navigate(ctx, store, "000000u2", NavigateOptions{Summarize: true, Summarizer: blocking, Label: "x"})
		done <- err
	}()
	<-started
	cancel()
	err := <-done
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	sameBytes(t, path, before)
	if leafID(store) != "000000a3" {
		t.Errorf("leaf moved to %q", leafID(store))
	}
}

// TestNavigateSummaryFailures: an invalid or failed summary fails the
// navigation and changes nothing; nothing to summarize is not an error.
func TestNavigateSummaryFailures(t *testing.T) {
	tests := []struct {
		name    string
		s       summary.Summarizer
		wantErr error
	}{
		{name: "empty", s: &fixedSummarizer{text: " \n"}, wantErr: ErrInvalidSummary},
		{name: "cut off", s: &fixedSummarizer{text: "## Goal\nhalf", finish: summary.FinishLength}, wantErr: ErrInvalidSummary},
		{name: "over the cap", s: &fixedSummarizer{text: strings.Repeat("word ", 2000)}, wantErr: ErrInvalidSummary},
		{name: "no summarizer", s: nil, wantErr: ErrNoSummarizer},
		{name: "provider error", s: summary.Func(func(context.Context, summary.Request) (summary.Result, error) {
			return summary.Result{}, summarize.ErrBadResponse
		}), wantErr: summarize.ErrBadResponse},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeSession(t, treeLines)
			store := openStore(t, path)
			before := readFile(t, path)
			_, err := Navigate(context.Background(), store, "000000a2", NavigateOptions{Summarize: true, Summarizer: tt.s})
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("error %v, want %v", err, tt.wantErr)
			}
			sameBytes(t, path, before)
			if leafID(store) != "000000a3" {
				t.Errorf("leaf moved to %q", leafID(store))
			}
		})
	}

	t.Run("nothing to summarize", func(t *testing.T) {
		// From a1 forward to a2: a1 is an ancestor of a2, nothing is left.
		path := writeSession(t, treeLines)
		store := openStore(t, path)
		if err := store.SetLeaf("000000a1"); err != nil {
			t.Fatal(err)
		}
		res, err := Navigate(context.Background(), store, "000000a2", NavigateOptions{Summarize: true, Summarizer: failingSummarizer(t)})
		if err != nil {
			t.Fatal(err)
		}
		if res.SummaryEntry != nil || res.EntriesSummarized != 0 || res.MarkerEntry == nil {
			t.Errorf("result %+v", res)
		}
	})
}

// TestNavigateAbortInHook cancels the context while session_before_tree
// runs; the hook itself returns normally.
func TestNavigateAbortInHook(t *testing.T) {
	path := writeSession(t, treeLines)
	store := openStore(t, path)
	before := readFile(t, path)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err := Navigate(ctx, store, "000000u2", NavigateOptions{Label: "x",
		BeforeTree: func(context.Context, BeforeTreeEvent) (BeforeTreeResult, error) {
			cancel()
			return BeforeTreeResult{}, nil
		},
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	sameBytes(t, path, before)
	if leafID(store) != "000000a3" {
		t.Errorf("leaf moved to %q", leafID(store))
	}
}

// TestNavigateBuiltinSummarizer runs navigations of generated sessions
// end to end with the deterministic built-in summarizer.
func TestNavigateBuiltinSummarizer(t *testing.T) {
	s := builtin.New(builtin.Options{})
	done := map[string]bool{}
	n := 0
	for _, g := range loadPiCases(t) {
		if g.Messages == 0 || g.BudgetKind != "default" || done[g.File] || n >= 8 {
			continue
		}
		done[g.File] = true
		n++
		t.Run(g.File+"/"+g.TargetID, func(t *testing.T) {
			path := copyGenerated(t, g.File)
			store := openStore(t, path)
			res, err := Navigate(context.Background(), store, g.TargetID, NavigateOptions{Summarize: true, Summarizer: s})
			if err != nil {
				t.Fatal(err)
			}
			e := res.SummaryEntry
			if e == nil {
				t.Fatal("no summary entry")
			}
			summary := e.Get("summary").String()
			if !strings.HasPrefix(summary, prompts.BranchPreamble+"## Goal") || e.Get("fromId").String() != g.OldLeafID {
				t.Errorf("summary entry %.300s", e.Raw)
			}
			if !slices.Equal(nonNil(stringsOf(e.Get("details.modifiedFiles").Array())), nonNil(g.ModifiedFiles)) {
				t.Errorf("details %s, pi's modified files %q", e.Get("details").Raw, g.ModifiedFiles)
			}
			if again := openStore(t, path); leafID(again) != e.ID {
				t.Errorf("reopened leaf %q, want the summary %s", leafID(again), e.ID)
			}
		})
	}
	if n == 0 {
		t.Fatal("no golden case to navigate")
	}
}

func stringsOf(rs []gjson.Result) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.String())
	}
	return out
}

func TestTokenBudget(t *testing.T) {
	tests := []struct {
		window, reserve, want int
	}{
		{0, 0, 128000 - 16384},
		{200000, 0, 200000 - 16384},
		{32000, 8000, 24000},
		{8000, 16384, 1}, // never "no limit"
	}
	for _, tt := range tests {
		if got := (NavigateOptions{ContextWindow: tt.window, ReserveTokens: tt.reserve}).TokenBudget(); got != tt.want {
			t.Errorf("window %d reserve %d: budget %d, want %d", tt.window, tt.reserve, got, tt.want)
		}
	}
}

// TestNavigateFromNoLeaf: a session whose leaf was reset before the first
// entry has no branch to leave; the navigation still lands durably.
func TestNavigateFromNoLeaf(t *testing.T) {
	path := writeSession(t, treeLines)
	store := openStore(t, path)
	if err := store.SetLeaf(""); err != nil {
		t.Fatal(err)
	}
	res, err := Navigate(context.Background(), store, "000000a2", NavigateOptions{Summarize: true, Summarizer: failingSummarizer(t)})
	if err != nil {
		t.Fatal(err)
	}
	if res.OldLeafID != "" || res.EntriesSummarized != 0 || res.SummaryEntry != nil || res.MarkerEntry == nil || res.MarkerEntry.ParentID != "000000a2" {
		t.Errorf("result %+v", res)
	}
	if again := openStore(t, path); leafID(again) != res.NewLeafID {
		t.Errorf("reopened leaf %q, want %s", leafID(again), res.NewLeafID)
	}
}
