package sessiongen

import (
	"errors"
	"fmt"
	"time"
)

// Options control one generated session. Probabilities are per opportunity
// (per user turn unless stated otherwise) in [0, 1]; zero disables a feature.
type Options struct {
	// Seed makes the output reproducible: equal Options give equal bytes.
	Seed uint64
	// Entries is the exact number of entries after the header.
	Entries int
	// Version is the file format to write: 3 (the default when 0), 2 (ids,
	// custom-role messages written with the old role "hookMessage"), or 1
	// (no ids, one linear chain, compactions carry firstKeptEntryIndex; only
	// the entry types pi had then). pi migrates 1 and 2 to 3 on load.
	Version int
	// Malformed: chance before each entry of a line pi's loader skips (a
	// blank line, a torn JSON object, or text that is not JSON).
	Malformed float64
	// TornTail ends the file with half a line and no newline, as a crash
	// mid-append leaves it.
	TornTail bool
	// Cwd goes into the header; Start is the header timestamp and the clock
	// that entry timestamps advance from.
	Cwd   string
	Start time.Time

	// Branch: before a user turn, re-parent to the end of an earlier turn on
	// the current path, leaving the entries after it as an abandoned branch.
	Branch float64
	// BranchSummary: after such a branch point, start the new branch with a
	// branch_summary entry (as pi's tree navigation writes it).
	BranchSummary float64
	// Compaction: before a user turn, append a compaction entry whose
	// firstKeptEntryId is a user or assistant message on the current path.
	Compaction float64
	// FromHook: share of compactions and branch summaries marked fromHook.
	FromHook float64
	// SplitTurn: share of turns that are long tool chains (SplitTurnMin to
	// SplitTurnMax assistant/tool rounds) instead of 0–3 rounds.
	SplitTurn    float64
	SplitTurnMin int
	SplitTurnMax int
	// Metadata: chance of each of model_change, thinking_level_change and
	// label right before a user message.
	Metadata float64
	// Extras: chance of each of custom_message, custom, session_info and a
	// user-run bashExecution message before a user turn.
	Extras float64
	// Image: share of tool results (and user messages) carrying an image.
	Image float64
	// ToolError: share of tool results with isError true.
	ToolError float64
	// Aborted / Errored: share of turns ending in an aborted / errored
	// assistant message.
	Aborted float64
	Errored float64
	// EscapedStrings: share of lines written with \uXXXX and \/ escapes
	// instead of pi's own JSON.stringify form.
	EscapedStrings float64
	// OddArguments: share of tool calls whose arguments carry nested
	// objects, integer-like keys, and numbers written as 1.0 / 1e2 / -0.5.
	OddArguments float64

	// Tool result text sizes in bytes: most results are between
	// ToolResultMin and ToolResultTypical; a Large share goes up to
	// ToolResultMax.
	ToolResultMin     int
	ToolResultTypical int
	ToolResultMax     int
	Large             float64
	// ProseMax bounds the length in bytes of assistant text and thinking
	// blocks, long user prompts, summaries and written file contents.
	ProseMax int
}

// Defaults returns options for a varied, realistic session of n entries.
func Defaults(seed uint64, n int) Options {
	return Options{
		Seed:              seed,
		Entries:           n,
		Cwd:               "/repo",
		Start:             time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Branch:            0.08,
		BranchSummary:     0.5,
		Compaction:        0.04,
		FromHook:          0.3,
		SplitTurn:         0.15,
		SplitTurnMin:      8,
		SplitTurnMax:      30,
		Metadata:          0.08,
		Extras:            0.04,
		Image:             0.03,
		ToolError:         0.06,
		Aborted:           0.03,
		Errored:           0.03,
		EscapedStrings:    0.08,
		OddArguments:      0.2,
		ToolResultMin:     8,
		ToolResultTypical: 1500,
		ToolResultMax:     200 * 1024,
		Large:             0.02,
		ProseMax:          1500,
	}
}

// Small returns Defaults with tool results kept small (at most 8 KB), for
// golden test corpora that must stay compact.
func Small(seed uint64, n int) Options {
	o := Defaults(seed, n)
	o.ToolResultTypical = 200
	o.ToolResultMax = 6 * 1024
	o.Large = 0.03
	o.Image = 0.015
	o.ProseMax = 300
	return o
}

// Benchmark returns options for large sessions of about 1 KB per entry
// (100 000 entries ≈ 100 MB).
func Benchmark(seed uint64, n int) Options {
	o := Defaults(seed, n)
	o.ToolResultTypical = 600
	o.Large = 0.004
	o.ProseMax = 700
	return o
}

// ErrInvalidOptions is returned (wrapped) for options that cannot work.
var ErrInvalidOptions = errors.New("sessiongen: invalid options")

func (o Options) validate() error {
	if o.Entries < 1 {
		return fmt.Errorf("%w: Entries must be at least 1, got %d", ErrInvalidOptions, o.Entries)
	}
	for name, p := range map[string]float64{
		"Branch": o.Branch, "BranchSummary": o.BranchSummary, "Compaction": o.Compaction,
		"FromHook": o.FromHook, "SplitTurn": o.SplitTurn, "Metadata": o.Metadata,
		"Extras": o.Extras, "Image": o.Image, "ToolError": o.ToolError, "Aborted": o.Aborted,
		"Errored": o.Errored, "EscapedStrings": o.EscapedStrings, "OddArguments": o.OddArguments,
		"Large": o.Large, "Malformed": o.Malformed,
	} {
		if p < 0 || p > 1 {
			return fmt.Errorf("%w: %s must be in [0,1], got %v", ErrInvalidOptions, name, p)
		}
	}
	if o.ToolResultMin < 0 || o.ToolResultTypical < o.ToolResultMin || o.ToolResultMax < o.ToolResultTypical {
		return fmt.Errorf("%w: need 0 <= ToolResultMin <= ToolResultTypical <= ToolResultMax, got %d/%d/%d",
			ErrInvalidOptions, o.ToolResultMin, o.ToolResultTypical, o.ToolResultMax)
	}
	if o.Version < 0 || o.Version > 3 {
		return fmt.Errorf("%w: Version must be 1, 2 or 3, got %d", ErrInvalidOptions, o.Version)
	}
	if o.ProseMax < 1 {
		return fmt.Errorf("%w: ProseMax must be at least 1, got %d", ErrInvalidOptions, o.ProseMax)
	}
	if o.SplitTurn > 0 && (o.SplitTurnMin < 1 || o.SplitTurnMax < o.SplitTurnMin) {
		return fmt.Errorf("%w: need 1 <= SplitTurnMin <= SplitTurnMax, got %d/%d", ErrInvalidOptions, o.SplitTurnMin, o.SplitTurnMax)
	}
	return nil
}

// Branchy returns Small options with many abandoned branches, earlier
// compactions and branch summaries, for tree-navigation corpora.
func Branchy(seed uint64, n int) Options {
	o := Small(seed, n)
	o.Branch = 0.3
	o.BranchSummary = 0.6
	o.Compaction = 0.08
	o.FromHook = 0.35
	return o
}

// Profiles names the presets for command lines and manifests.
var Profiles = []string{"small", "default", "benchmark", "branchy"}

// Profile returns the preset called name (see Profiles).
func Profile(name string, seed uint64, n int) (Options, error) {
	switch name {
	case "small":
		return Small(seed, n), nil
	case "default":
		return Defaults(seed, n), nil
	case "benchmark":
		return Benchmark(seed, n), nil
	case "branchy":
		return Branchy(seed, n), nil
	}
	return Options{}, fmt.Errorf("%w: unknown profile %q (have %v)", ErrInvalidOptions, name, Profiles)
}
