package compaction

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/core/tokens"
)

func TestPrepareNothingToCompact(t *testing.T) {
	tests := []struct {
		name   string
		build  func(b *builder)
		reason string
	}{
		{"empty session", func(b *builder) {}, "empty session"},
		{"last entry is a compaction", func(b *builder) {
			u := b.user(10)
			b.assistant(10)
			b.compaction(u, "s", "")
		}, "already compacted"},
		{"everything fits the kept part", func(b *builder) {
			b.user(10)
			b.assistant(10)
		}, "no messages to summarize"},
		{"only what the previous compaction kept, and it fits", func(b *builder) {
			b.user(10)
			u2 := b.user(10)
			b.compaction(u2, "s", "")
			b.user(10)
		}, "no messages to summarize"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := &builder{}
			tt.build(b)
			var path []*session.Entry
			if len(b.lines) > 0 {
				path = b.path(t)
			}
			_, err := Prepare(path, DefaultSettings())
			if !errors.Is(err, ErrNothingToCompact) || !strings.Contains(err.Error(), tt.reason) {
				t.Fatalf("err = %v, want ErrNothingToCompact: %s", err, tt.reason)
			}
		})
	}
}

func TestPrepareSecondCompactionSummarizesWhatTheFirstKept(t *testing.T) {
	b := &builder{}
	b.user(100)
	b.assistant(100, `c1:read:{"path":"/old/read.go"}`)
	b.result("c1", "read", 10)
	u2 := b.user(100)
	a2 := b.assistant(100, `c2:edit:{"path":"/a.go"}`)
	b.result("c2", "edit", 10)
	b.compaction(u2, "first summary", `{"readFiles":["/prev/r.go","/a.go"],"modifiedFiles":["/prev/m.go"]}`)
	u3 := b.user(100)
	b.assistant(100)
	path := b.path(t)
	s := Settings{ReserveTokens: 16384, KeepRecentTokens: 150}
	prep, err := Prepare(path, s)
	if err != nil {
		t.Fatal(err)
	}
	if prep.RangeStart != indexOf(t, path, u2) {
		t.Fatalf("range starts at %d, want the first compaction's kept entry %d", prep.RangeStart, indexOf(t, path, u2))
	}
	if prep.FirstKeptEntryID != u3 || prep.Cut.IsSplitTurn {
		t.Fatalf("cut at %s split %v, want %s clean", prep.FirstKeptEntryID, prep.Cut.IsSplitTurn, u3)
	}
	if got := roles(prep.MessagesToSummarize); !slices.Equal(got, []string{"user", "assistant", "toolResult"}) ||
		prep.MessagesToSummarize[1].EntryID != a2 {
		t.Fatalf("summarized %v", got)
	}
	if prep.PreviousSummary != "first summary" {
		t.Fatalf("previous summary %q", prep.PreviousSummary)
	}
	// The previous details are carried; /a.go was read before and edited
	// now, so it counts as modified only. /old/read.go is outside the range.
	if !slices.Equal(prep.ReadFiles, []string{"/prev/r.go"}) || !slices.Equal(prep.ModifiedFiles, []string{"/a.go", "/prev/m.go"}) {
		t.Fatalf("files %q %q", prep.ReadFiles, prep.ModifiedFiles)
	}
	if got := roles(prep.RecentMessages); !slices.Equal(got, []string{"user", "assistant"}) {
		t.Fatalf("recent %v", got)
	}
}

func TestPrepareIgnoresHookDetails(t *testing.T) {
	b := &builder{}
	b.user(100)
	u2 := b.user(100)
	b.add("compaction", `"summary":"s","firstKeptEntryId":"`+u2+`","tokensBefore":1,"details":{"readFiles":["/hook.go"]},"fromHook":true`)
	b.user(100)
	prep, err := Prepare(b.path(t), Settings{KeepRecentTokens: 50})
	if err != nil {
		t.Fatal(err)
	}
	if len(prep.ReadFiles) != 0 {
		t.Fatalf("read files %q from a hook compaction's details", prep.ReadFiles)
	}
}

func TestFileOps(t *testing.T) {
	b := &builder{}
	b.user(1)
	b.assistant(1,
		`c1:read:{"path":"/r.go"}`,
		`c2:read:{"path":"/w.go"}`,
		`c3:write:{"path":"/w.go"}`,
		`c4:edit:{"path":"！.go"}`,
		`c5:edit:{"path":"😀.go"}`,
		`c6:read:{"path":42}`,
		`c7:read:{"path":""}`,
		`c8:bash:{"path":"/bash.go"}`,
	)
	b.user(1000)
	prep, err := Prepare(b.path(t), Settings{KeepRecentTokens: 10})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(prep.ReadFiles, []string{"/r.go"}) {
		t.Fatalf("read %q", prep.ReadFiles)
	}
	// JavaScript order: U+1F600 is the surrogate pair D83D DE00, which sorts
	// before U+FF01; Go's byte order would put it after.
	if !slices.Equal(prep.ModifiedFiles, []string{"/w.go", "😀.go", "！.go"}) {
		t.Fatalf("modified %q", prep.ModifiedFiles)
	}
}

func TestPrepareCalibration(t *testing.T) {
	build := func() []*session.Entry {
		b := &builder{}
		for range 10 {
			b.user(100)
			b.assistant(100)
		}
		// The provider counted 4000 prompt tokens where chars/4 says ~2000.
		b.assistantUsage(100, 4200)
		return b.path(t)
	}
	path := build()
	estimated := 0
	for _, e := range path {
		estimated += tokens.Estimate(e.MessageRaw())
	}
	if estimated != 2100 {
		t.Fatalf("estimated %d", estimated)
	}
	tests := []struct {
		name      string
		calibrate bool
		wantKeep  int
	}{
		{"off", false, 1000},
		{"total: keep scaled by estimate/prompt", true, 1000 * 2100 / 4200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prep, err := Prepare(path, Settings{ReserveTokens: 16384, KeepRecentTokens: 1000, CalibrateKeepRecent: tt.calibrate, CalibrationMethod: CalibrationTotal})
			if err != nil {
				t.Fatal(err)
			}
			if prep.KeepRecentTokens != tt.wantKeep {
				t.Fatalf("keepRecentTokens %d, want %d", prep.KeepRecentTokens, tt.wantKeep)
			}
			kept := sumTokens(prep.RecentMessages)
			if kept < tt.wantKeep || kept > tt.wantKeep+200 {
				t.Fatalf("kept %d tokens for a budget of %d", kept, tt.wantKeep)
			}
		})
	}
	t.Run("estimate above usage changes nothing", func(t *testing.T) {
		b := &builder{}
		for range 10 {
			b.user(100)
			b.assistant(100)
		}
		b.assistantUsage(100, 500)
		prep, err := Prepare(b.path(t), Settings{KeepRecentTokens: 1000, CalibrateKeepRecent: true})
		if err != nil {
			t.Fatal(err)
		}
		if prep.KeepRecentTokens != 1000 {
			t.Fatalf("keepRecentTokens %d", prep.KeepRecentTokens)
		}
	})
	t.Run("no usage: no calibration", func(t *testing.T) {
		b := &builder{}
		for range 10 {
			b.user(100)
		}
		prep, err := Prepare(b.path(t), Settings{KeepRecentTokens: 300, CalibrateKeepRecent: true})
		if err != nil {
			t.Fatal(err)
		}
		if prep.KeepRecentTokens != 300 {
			t.Fatalf("keepRecentTokens %d", prep.KeepRecentTokens)
		}
	})
}

// TestContextTokensMatchesBuildContext checks the lazy ContextTokens
// against tokens.Context over session.BuildContext on every generated file
// and every prefix-leaf of a few of them.
func TestContextTokensMatchesBuildContext(t *testing.T) {
	files, _ := filepath.Glob("testdata/generated/*.jsonl")
	if len(files) == 0 {
		t.Skip("no generated sessions")
	}
	for i, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := session.Parse(data)
		if err != nil {
			t.Fatal(err)
		}
		tree := session.NewTree(f.Entries)
		leaves := []*session.Entry{tree.Last()}
		if i < 8 {
			leaves = f.Entries
		}
		for _, leaf := range leaves {
			path := tree.Path(leaf)
			ctx := session.NewTree(path).BuildContext(leaf.ID)
			want := tokens.Context(len(ctx.Messages), func(i int) []byte { return ctx.Messages[i].Raw }).Tokens
			if got := ContextTokens(path); got != want {
				t.Fatalf("%s leaf %s: ContextTokens %d, BuildContext+tokens.Context %d", name, leaf.ID, got, want)
			}
		}
	}
}

// TestCalibrationOnGolden runs Prepare with the total calibration over the
// golden cases and checks the budget against docs/behaviour.md §5.3's original formula
// computed in full (the code stops summing early once the ratio cannot
// exceed 1).
func TestCalibrationOnGolden(t *testing.T) {
	changed := 0
	for _, g := range loadGolden(t) {
		if g.Dir != "generated" {
			continue
		}
		path := loadPath(t, g.Dir, g.File)
		s := Settings{ReserveTokens: g.ReserveTokens, KeepRecentTokens: g.KeepRecentTokens, CalibrateKeepRecent: true, CalibrationMethod: CalibrationTotal}
		prep, err := Prepare(path, s)
		if errors.Is(err, ErrNothingToCompact) {
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", g.File, err)
		}
		want := g.KeepRecentTokens
		prompt, found := -1, false
		for i := len(path) - 1; i >= 0 && !found; i-- {
			if raw := path[i].MessageRaw(); raw != nil && path[i].Role() == session.RoleAssistant {
				prompt, found = tokens.PromptTokens(raw)
			}
		}
		if found {
			if prompt == 0 {
				prompt = prep.TokensBefore
			}
			estimated := 0
			for _, e := range path[prep.RangeStart:] {
				if m, ok := summaryMessage(e); ok {
					estimated += tokens.Estimate(m.Raw)
				}
			}
			if estimated > 0 && prompt > estimated {
				want = max(1, int(int64(want)*int64(estimated)/int64(prompt)))
			}
		}
		if prep.KeepRecentTokens != want {
			t.Errorf("%s keep %d: calibrated to %d, want %d", g.File, g.KeepRecentTokens, prep.KeepRecentTokens, want)
		}
		if want != g.KeepRecentTokens {
			changed++
		}
	}
	t.Logf("calibration changed the budget in %d cases", changed)
}
