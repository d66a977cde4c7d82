package builtin

import (
	"context"
	"errors"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/core/summary"
	"github.com/pith-dev/pith/core/tokens"
	"github.com/pith-dev/pith/internal/testfixture"
)

// The package's tests share one -update flag; whichever file is compiled
// in defines it.
func init() {
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite golden files under testdata/")
	}
}

func updateGolden() bool {
	f := flag.Lookup("update")
	if f == nil {
		return false
	}
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return false
	}
	v, _ := g.Get().(bool)
	return v
}

// piFixtures is where the shared pi session fixtures live, relative to
// this package.
var piFixtures = testfixture.PiDir()

// loadPiContext builds the context of a shared pi fixture, skipping the
// test when the fixture is not there.
func loadPiContext(t testing.TB, name string) session.Context {
	t.Helper()
	path := filepath.Join(piFixtures, name)
	f, err := session.Load(path)
	if errors.Is(err, fs.ErrNotExist) {
		testfixture.Missing(t, "fixture %s not present", path)
	}
	if err != nil {
		t.Fatalf("load %s: %v", path, err)
	}
	return session.NewTree(f.Entries).BuildContext(session.LeafDefault)
}

func TestBuiltinPiFixtures(t *testing.T) {
	tests := []struct {
		fixture string
		golden  string // "" when no golden is kept
	}{
		{fixture: "before-compaction.v3.jsonl", golden: "before-compaction.history.md"},
		{fixture: "large-session.v3.jsonl"},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			sc := loadPiContext(t, tt.fixture)
			if len(sc.Messages) == 0 {
				t.Fatal("fixture context has no messages")
			}
			const maxTokens = 13107 // 0.8 × the default reserve of 16384
			req := summary.Request{Purpose: summary.PurposeHistory, MaxTokens: maxTokens, Source: &summary.Transcript{Messages: sc.Messages}}
			res, err := New(Options{}).Summarize(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if res.FinishReason != summary.FinishStop {
				t.Errorf("FinishReason = %s", res.FinishReason)
			}
			if got := (tokens.Units(res.Text) + 3) / 4; got > maxTokens {
				t.Errorf("summary is %d tokens, over the cap %d", got, maxTokens)
			}
			checkHistoryShape(t, res.Text)
			if len(res.Text) < 1000 {
				t.Errorf("summary is trivial (%d bytes):\n%s", len(res.Text), res.Text)
			}
			for _, want := range []string{"- [x] ", "`"} {
				if !strings.Contains(res.Text, want) {
					t.Errorf("summary lacks %q", want)
				}
			}
			if tt.golden != "" {
				checkTextGolden(t, filepath.Join("testdata", tt.golden), res.Text)
			}
		})
	}
}

// checkTextGolden compares text with a golden file, rewriting it under
// -update.
func checkTextGolden(t *testing.T, path, got string) {
	t.Helper()
	if updateGolden() {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("golden %s: %v (run with -update to create it)", path, err)
	}
	if string(want) == got+"\n" {
		return
	}
	w, g := strings.Split(string(want), "\n"), strings.Split(got+"\n", "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			t.Errorf("output differs from %s at line %d (run with -update to accept):\ngot:  %q\nwant: %q", path, i+1, gl, wl)
			return
		}
	}
}
