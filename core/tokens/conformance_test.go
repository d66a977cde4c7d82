package tokens_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/core/tokens"
	"github.com/pith-dev/pith/internal/testfixture"
)

var fixtureDir = testfixture.PiDir()

// TestEstimateMatchesPi compares Estimate with pi's estimateTokens on every
// message entry of the shared fixtures (golden data from
// conformance/context.mjs), and the JSON.stringify length of every tool
// call's arguments.
//
// The same runs over the generated corpus, written to stress the JSON
// rules: escapes like \u00e9 and \/, numbers like 1.0 and 1e2,
// integer-like keys, astral characters, control characters.
func TestEstimateMatchesPi(t *testing.T) {
	t.Run("fixtures", func(t *testing.T) {
		checkEstimates(t, "testdata/golden/pi-fixtures-estimates.json", fixtureDir)
	})
	t.Run("generated", func(t *testing.T) {
		checkEstimates(t, "testdata/golden/pi-generated-estimates.json", "testdata/golden/generated")
	})
}

func checkEstimates(t *testing.T, goldenPath, dir string) {
	var golden struct {
		Files []struct {
			File     string `json:"file"`
			PerEntry []struct {
				Line      int    `json:"line"`
				Type      string `json:"type"`
				Role      string `json:"role"`
				Estimate  *int   `json:"estimate"`
				ToolCalls []struct {
					Name          string `json:"name"`
					ArgsJSONChars int    `json:"argsJsonChars"`
				} `json:"toolCalls"`
			} `json:"perEntry"`
		} `json:"files"`
	}
	data, err := os.ReadFile(goldenPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &golden); err != nil {
		t.Fatal(err)
	}
	for _, g := range golden.Files {
		t.Run(g.File, func(t *testing.T) {
			p := filepath.Join(dir, g.File)
			if _, err := os.Stat(p); err != nil {
				testfixture.Missing(t, "pi fixtures not available: %v", err)
			}
			f, err := session.Load(p)
			if err != nil {
				t.Fatal(err)
			}
			byLine := map[int]*session.Entry{}
			for _, e := range f.Entries {
				byLine[e.Line-1] = e
			}
			checked := 0
			for _, pe := range g.PerEntry {
				e := byLine[pe.Line]
				if e == nil || e.Type != pe.Type {
					t.Fatalf("line %d: entry missing or of another type", pe.Line)
				}
				if pe.Type != session.TypeMessage || pe.Estimate == nil {
					continue
				}
				raw := e.MessageRaw()
				if got := tokens.Estimate(raw); got != *pe.Estimate {
					t.Errorf("line %d (%s): estimate %d, pi %d", pe.Line, pe.Role, got, *pe.Estimate)
				}
				m, err := session.Message{Raw: raw}.Decode()
				if err != nil {
					t.Fatal(err)
				}
				i := 0
				for _, b := range m.ContentBlocks() {
					if b.Type != "toolCall" {
						continue
					}
					if got := tokens.StringifiedLen(b.Arguments); got != pe.ToolCalls[i].ArgsJSONChars {
						t.Errorf("line %d: arguments of %s: %d chars, pi %d", pe.Line, b.Name, got, pe.ToolCalls[i].ArgsJSONChars)
					}
					i++
				}
				checked++
			}
			if checked == 0 {
				t.Fatal("no message compared")
			}
		})
	}
}
