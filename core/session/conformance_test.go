package session_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/core/tokens"
	"github.com/pith-dev/pith/internal/testfixture"
)

// fixtureDir is where the shared pi sessions live in the developers'
// checkout; a user's clone has none and the conformance tests skip.
var fixtureDir = testfixture.PiDir()

func fixture(t testing.TB, name string) string {
	t.Helper()
	p := filepath.Join(fixtureDir, name)
	if _, err := os.Stat(p); err != nil {
		testfixture.Missing(t, "pi fixtures not available (%s): %v", fixtureDir, err)
	}
	return p
}

type goldenLeaf struct {
	LeafID        *string           `json:"leafId"`
	Why           string            `json:"why"`
	Messages      int               `json:"messages"`
	Roles         []string          `json:"roles"`
	Tokens        int               `json:"tokens"`
	Model         *session.ModelRef `json:"model"`
	ThinkingLevel string            `json:"thinkingLevel"`
}

type goldenContext struct {
	Files []struct {
		Leaves         []goldenLeaf      `json:"leaves"`
		File           string            `json:"file"`
		FileVersion    int               `json:"fileVersion"`
		IDsFromFile    bool              `json:"idsFromFile"`
		Entries        int               `json:"entries"`
		LeafID         *string           `json:"leafId"`
		LeafLine       int               `json:"leafLine"`
		Messages       int               `json:"messages"`
		Roles          []string          `json:"roles"`
		Tokens         int               `json:"tokens"`
		UsageTokens    int               `json:"usageTokens"`
		TrailingTokens int               `json:"trailingTokens"`
		LastUsageIndex *int              `json:"lastUsageIndex"`
		Model          *session.ModelRef `json:"model"`
		ThinkingLevel  string            `json:"thinkingLevel"`
		PerMessage     []struct {
			Index    int    `json:"index"`
			Role     string `json:"role"`
			Estimate int    `json:"estimate"`
			Line     *int   `json:"line"`
		} `json:"perMessage"`
	} `json:"files"`
}

// TestPiContextConformance checks BuildContext and the context-token total
// against what pi 0.73.1 computed on the shared fixtures (golden data made by
// conformance/context.mjs). v1 files are compared by line, since migrating
// v1 invents ids.
//
// The generated corpus (internal/sessiongen: v1, v2 and v3 files, malformed
// lines, torn tails, branches, compactions) is checked the same way, and
// both also at other leaves: abandoned branches, at and before compactions,
// an unknown id and an explicit empty leaf.
func TestPiContextConformance(t *testing.T) {
	t.Run("fixtures", func(t *testing.T) {
		checkContextGolden(t, "testdata/golden/pi-fixtures-context.json", func(t *testing.T, name string) string { return fixture(t, name) })
	})
	t.Run("generated", func(t *testing.T) {
		checkContextGolden(t, "testdata/golden/pi-generated-context.json", func(t *testing.T, name string) string {
			return filepath.Join("testdata/golden/generated", name)
		})
	})
}

func checkContextGolden(t *testing.T, goldenPath string, locate func(*testing.T, string) string) {
	var golden goldenContext
	data, err := os.ReadFile(goldenPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &golden); err != nil {
		t.Fatal(err)
	}
	for _, g := range golden.Files {
		t.Run(g.File, func(t *testing.T) {
			f, err := session.Load(locate(t, g.File))
			if err != nil {
				t.Fatal(err)
			}
			if len(f.Entries) != g.Entries {
				t.Errorf("entries = %d, pi %d", len(f.Entries), g.Entries)
			}
			tree := session.NewTree(f.Entries)
			ctx := tree.BuildContext(session.LeafDefault)
			if got := ctx.Leaf.Line - 1; got != g.LeafLine {
				t.Errorf("leaf line = %d, pi %d", got, g.LeafLine)
			}
			if g.IDsFromFile && (g.LeafID == nil || ctx.Leaf.ID != *g.LeafID) {
				t.Errorf("leaf id = %s, pi %v", ctx.Leaf.ID, g.LeafID)
			}
			if len(ctx.Messages) != g.Messages {
				t.Fatalf("messages = %d, pi %d", len(ctx.Messages), g.Messages)
			}
			for i, m := range ctx.Messages {
				if m.Role != g.Roles[i] {
					t.Fatalf("role[%d] = %s, pi %s", i, m.Role, g.Roles[i])
				}
			}
			for _, pm := range g.PerMessage {
				m := ctx.Messages[pm.Index]
				if got := tokens.Estimate(m.Raw); got != pm.Estimate {
					t.Errorf("estimate of message %d (%s) = %d, pi %d", pm.Index, pm.Role, got, pm.Estimate)
				}
				if pm.Line != nil {
					if e := tree.Get(m.EntryID); e == nil || e.Line-1 != *pm.Line {
						t.Errorf("message %d comes from the wrong entry", pm.Index)
					}
				}
			}
			est := tokens.Context(len(ctx.Messages), func(i int) []byte { return ctx.Messages[i].Raw })
			if est.Tokens != g.Tokens || est.UsageTokens != g.UsageTokens || est.TrailingTokens != g.TrailingTokens {
				t.Errorf("context tokens = %+v, pi tokens %d usage %d trailing %d", est, g.Tokens, g.UsageTokens, g.TrailingTokens)
			}
			if g.LastUsageIndex != nil && est.LastUsageIndex != *g.LastUsageIndex {
				t.Errorf("last usage index = %d, pi %d", est.LastUsageIndex, *g.LastUsageIndex)
			}
			if (ctx.Model == nil) != (g.Model == nil) || (ctx.Model != nil && *ctx.Model != *g.Model) {
				t.Errorf("model = %+v, pi %+v", ctx.Model, g.Model)
			}
			if ctx.ThinkingLevel != g.ThinkingLevel {
				t.Errorf("thinking level = %s, pi %s", ctx.ThinkingLevel, g.ThinkingLevel)
			}
			for _, l := range g.Leaves {
				leaf := ""
				switch {
				case l.LeafID != nil && (g.IDsFromFile || l.Why == "unknownFallsBackToLast"):
					leaf = *l.LeafID
				case l.LeafID != nil:
					continue // pi's ids for a migrated v1 file are random
				}
				c := tree.BuildContext(leaf)
				e := tokens.Context(len(c.Messages), func(i int) []byte { return c.Messages[i].Raw })
				roles := make([]string, len(c.Messages))
				for i, m := range c.Messages {
					roles[i] = m.Role
				}
				if !slices.Equal(roles, l.Roles) || e.Tokens != l.Tokens || c.ThinkingLevel != l.ThinkingLevel ||
					(c.Model == nil) != (l.Model == nil) || (c.Model != nil && *c.Model != *l.Model) {
					t.Errorf("leaf %v (%s): %d messages, %d tokens, %s, %+v; pi %d, %d, %s, %+v",
						l.LeafID, l.Why, len(roles), e.Tokens, c.ThinkingLevel, c.Model, len(l.Roles), l.Tokens, l.ThinkingLevel, l.Model)
				}
			}
		})
	}
}

// TestRoundTripV3Fixtures: an unmodified v3 file encodes to its own bytes.
func TestRoundTripV3Fixtures(t *testing.T) {
	for _, name := range []string{"before-compaction.v3.jsonl", "large-session.v3.jsonl"} {
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(fixture(t, name))
			if err != nil {
				t.Fatal(err)
			}
			f, err := session.Parse(data)
			if err != nil {
				t.Fatal(err)
			}
			if f.Migrated {
				t.Error("a v3 file was migrated")
			}
			var out bytes.Buffer
			if err := f.Encode(&out); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out.Bytes(), data) {
				t.Fatalf("round trip differs: %d bytes in, %d out", len(data), out.Len())
			}
		})
	}
}
