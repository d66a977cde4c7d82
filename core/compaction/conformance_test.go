package compaction

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/core/tokens"
	"github.com/pith-dev/pith/core/transcript"
	"github.com/pith-dev/pith/internal/testfixture"
	"github.com/tidwall/gjson"
)

// goldenCase is one record of testdata/golden/pi-prepare.json, written by
// conformance/prepare.mjs from pi 0.73.1's prepareCompaction.
type goldenCase struct {
	File                string   `json:"file"`
	Dir                 string   `json:"dir"`
	ReserveTokens       int      `json:"reserveTokens"`
	KeepRecentTokens    int      `json:"keepRecentTokens"`
	PathLength          int      `json:"pathLength"`
	LeafID              string   `json:"leafId"`
	Undefined           bool     `json:"undefined"`
	Reason              string   `json:"reason"`
	NothingToCompact    bool     `json:"nothingToCompact"`
	RangeStart          int      `json:"rangeStart"`
	FirstKeptIndex      int      `json:"firstKeptIndex"`
	FirstKeptType       string   `json:"firstKeptType"`
	TurnStartIndex      int      `json:"turnStartIndex"`
	FirstKeptEntryID    string   `json:"firstKeptEntryId"`
	IsSplitTurn         bool     `json:"isSplitTurn"`
	TokensBefore        int      `json:"tokensBefore"`
	MessagesToSummarize int      `json:"messagesToSummarize"`
	TurnPrefixMessages  int      `json:"turnPrefixMessages"`
	SummarizeRoles      []string `json:"summarizeRoles"`
	TurnPrefixRoles     []string `json:"turnPrefixRoles"`
	SummarizeTokens     int      `json:"summarizeTokens"`
	TurnPrefixTokens    int      `json:"turnPrefixTokens"`
	SerializedSummarize struct {
		Chars  int    `json:"chars"`
		SHA256 string `json:"sha256"`
	} `json:"serializedSummarize"`
	SerializedTurnPrefix struct {
		Chars  int    `json:"chars"`
		SHA256 string `json:"sha256"`
	} `json:"serializedTurnPrefix"`
	ReadFiles       []string `json:"readFiles"`
	ModifiedFiles   []string `json:"modifiedFiles"`
	PreviousSummary bool     `json:"previousSummary"`
}

var piFixtures = testfixture.PiDir()

func loadGolden(t testing.TB) []goldenCase {
	t.Helper()
	data, err := os.ReadFile("testdata/golden/pi-prepare.json")
	if err != nil {
		t.Skipf("no golden file: %v", err)
	}
	var g struct {
		Cases []json.RawMessage `json:"cases"`
	}
	if err := json.Unmarshal(data, &g); err != nil {
		t.Fatal(err)
	}
	out := make([]goldenCase, len(g.Cases))
	for i, raw := range g.Cases {
		out[i] = goldenCase{}
		if err := json.Unmarshal(raw, &out[i]); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// loadPath reads a session file and returns its default path (root to the
// last entry), or skips when a shared fixture is not checked out.
func loadPath(t testing.TB, dir, file string) []*session.Entry {
	t.Helper()
	var p string
	switch dir {
	case "generated":
		p = filepath.Join("testdata", "generated", file)
	case "pi-fixtures":
		p = filepath.Join(piFixtures, file)
		if _, err := os.Stat(p); err != nil {
			testfixture.Missing(t, "shared fixtures not available: %v", err)
		}
	default:
		t.Fatalf("unknown dir %q", dir)
	}
	pathCache.Lock()
	defer pathCache.Unlock()
	if path, ok := pathCache.m[p]; ok {
		return path
	}
	f, err := session.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	tree := session.NewTree(f.Entries)
	path := tree.Path(tree.Last())
	pathCache.m[p] = path
	return path
}

// pathCache keeps parsed files across the golden cases (several cases use
// one file); entries are immutable, so sharing them is safe.
var pathCache = struct {
	sync.Mutex
	m map[string][]*session.Entry
}{m: map[string][]*session.Entry{}}

func roles(msgs []session.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.Role
	}
	return out
}

func sumTokens(msgs []session.Message) int {
	n := 0
	for _, m := range msgs {
		n += tokens.Estimate(m.Raw)
	}
	return n
}

func digest(s string) (int, string) {
	h := sha256.Sum256([]byte(s))
	return tokens.Units(s), hex.EncodeToString(h[:])
}

// serializesLikePi reports whether SerializeConversation renders msgs
// exactly as the reference does. It does not when a summary message is
// present (Pith's own frame text) or when thinking, custom or bash text
// is longer than MaxPartChars (Pith clips those, docs/behaviour.md §6).
func serializesLikePi(msgs []session.Message) bool {
	for _, m := range msgs {
		r := gjson.ParseBytes(m.Raw)
		switch m.Role {
		case session.RoleBranchSummary, session.RoleCompactionSummary:
			return false
		case session.RoleCustom:
			if tokens.Units(transcript.ContentText(r.Get("content"), "")) > transcript.MaxPartChars {
				return false
			}
		case session.RoleBashExecution:
			if !r.Get("excludeFromContext").Bool() && tokens.Units(r.Get("output").String()) > transcript.MaxPartChars {
				return false
			}
		case session.RoleAssistant:
			var th []string
			r.Get("content").ForEach(func(_, b gjson.Result) bool {
				if b.Get("type").Str == "thinking" {
					th = append(th, b.Get("thinking").String())
				}
				return true
			})
			n := 0
			for _, s := range th {
				n += tokens.Units(s)
			}
			if n+len(th)-1 > transcript.MaxPartChars {
				return false
			}
		}
	}
	return true
}

// TestPrepareMatchesPi compares Prepare, with calibration off (the
// reference has none, docs/behaviour.md §5.3), against pi's prepareCompaction. The
// deliberate differences are detected and asserted, not skipped:
//   - §5.6: pi returns a preparation with nothing in it; Pith returns
//     ErrNothingToCompact.
//   - §4.4: a cut moved onto metadata before a user message, or a cut at a
//     bashExecution / custom_message / branch_summary, is a clean cut in
//     Pith; pi reports a split turn (with the previous turn, or nothing, as
//     its prefix). The messages summarized are the same in total.
func TestPrepareMatchesPi(t *testing.T) {
	var stats struct{ same, nothing, splitFix, serialized, serializedSkipped int }
	for _, g := range loadGolden(t) {
		name := g.Dir + "/" + g.File + "/" + itoa(g.KeepRecentTokens)
		t.Run(name, func(t *testing.T) {
			path := loadPath(t, g.Dir, g.File)
			if len(path) != g.PathLength {
				t.Fatalf("path length %d, pi %d", len(path), g.PathLength)
			}
			if g.LeafID != "" && path[len(path)-1].ID != g.LeafID {
				t.Fatalf("leaf %s, pi %s", path[len(path)-1].ID, g.LeafID)
			}
			prep, err := Prepare(path, Settings{ReserveTokens: g.ReserveTokens, KeepRecentTokens: g.KeepRecentTokens})
			if g.Undefined {
				// pi returned no preparation at all (already compacted, …).
				if !errors.Is(err, ErrNothingToCompact) {
					t.Fatalf("pi: %s; Prepare gave %v", g.Reason, err)
				}
				stats.nothing++
				return
			}
			if g.NothingToCompact {
				if !errors.Is(err, ErrNothingToCompact) {
					t.Fatalf("pi has nothing to compact (%s); Prepare gave %v", g.Reason, err)
				}
				stats.nothing++
				return
			}
			if err != nil {
				t.Fatalf("Prepare: %v", err)
			}
			if prep.RangeStart != g.RangeStart {
				t.Errorf("range start %d, pi %d", prep.RangeStart, g.RangeStart)
			}
			if prep.TokensBefore != g.TokensBefore {
				t.Errorf("tokensBefore %d, pi %d", prep.TokensBefore, g.TokensBefore)
			}
			if prep.Cut.FirstKeptIndex != g.FirstKeptIndex || prep.FirstKeptEntryID != g.FirstKeptEntryID {
				t.Fatalf("first kept %d (%s), pi %d (%s, %s)", prep.Cut.FirstKeptIndex, prep.FirstKeptEntryID,
					g.FirstKeptIndex, g.FirstKeptEntryID, g.FirstKeptType)
			}
			wantSum, wantPrefix := g.SummarizeRoles, g.TurnPrefixRoles
			wantSumTokens, wantPrefixTokens := g.SummarizeTokens, g.TurnPrefixTokens
			if g.IsSplitTurn != prep.Cut.IsSplitTurn {
				// Must be one of the §4.4 cases, asserted explicitly.
				if !g.IsSplitTurn || prep.Cut.IsSplitTurn {
					t.Fatalf("split %v, pi %v", prep.Cut.IsSplitTurn, g.IsSplitTurn)
				}
				firstMsg := path[prep.Cut.FirstKeptIndex]
				for i := prep.Cut.FirstKeptIndex; !yieldsMessage(firstMsg) && i+1 < len(path); i++ {
					firstMsg = path[i+1]
				}
				if !isTurnStart(firstMsg) {
					t.Fatalf("Pith sees a clean cut at %s, but the first kept message is %s %s", g.FirstKeptType, firstMsg.Type, firstMsg.Role())
				}
				if g.FirstKeptType == "message:user" {
					t.Fatalf("pi split at a user message?")
				}
				// pi's prefix is summarized as history in Pith.
				wantSum = append(slices.Clone(wantSum), wantPrefix...)
				wantPrefix = nil
				wantSumTokens += wantPrefixTokens
				wantPrefixTokens = 0
				if prep.Cut.TurnStartIndex != -1 {
					t.Errorf("clean cut with turn start %d", prep.Cut.TurnStartIndex)
				}
				stats.splitFix++
			} else if prep.Cut.TurnStartIndex != g.TurnStartIndex {
				t.Errorf("turn start %d, pi %d", prep.Cut.TurnStartIndex, g.TurnStartIndex)
			}
			if got := roles(prep.MessagesToSummarize); !slices.Equal(got, wantSum) {
				t.Errorf("summarized roles (%d) differ from pi's (%d)", len(got), len(wantSum))
			}
			if got := roles(prep.TurnPrefixMessages); !slices.Equal(got, nilIfEmpty(wantPrefix)) && !(len(got) == 0 && len(wantPrefix) == 0) {
				t.Errorf("turn prefix roles %v, pi %v", got, wantPrefix)
			}
			if n := sumTokens(prep.MessagesToSummarize); n != wantSumTokens {
				t.Errorf("summarized tokens %d, pi %d", n, wantSumTokens)
			}
			if n := sumTokens(prep.TurnPrefixMessages); n != wantPrefixTokens {
				t.Errorf("turn prefix tokens %d, pi %d", n, wantPrefixTokens)
			}
			if !slices.Equal(nonNil(prep.ReadFiles), nonNil(g.ReadFiles)) {
				t.Errorf("read files %q, pi %q", prep.ReadFiles, g.ReadFiles)
			}
			if !slices.Equal(nonNil(prep.ModifiedFiles), nonNil(g.ModifiedFiles)) {
				t.Errorf("modified files %q, pi %q", prep.ModifiedFiles, g.ModifiedFiles)
			}
			if (prep.PreviousSummary != "") != g.PreviousSummary {
				t.Errorf("previous summary %q, pi has one: %v", prep.PreviousSummary, g.PreviousSummary)
			}
			if g.IsSplitTurn == prep.Cut.IsSplitTurn {
				stats.same++
				for _, part := range []struct {
					msgs  []session.Message
					chars int
					sha   string
				}{
					{prep.MessagesToSummarize, g.SerializedSummarize.Chars, g.SerializedSummarize.SHA256},
					{prep.TurnPrefixMessages, g.SerializedTurnPrefix.Chars, g.SerializedTurnPrefix.SHA256},
				} {
					if !serializesLikePi(part.msgs) {
						stats.serializedSkipped++
						continue
					}
					n, sum := digest(transcript.SerializeConversation(part.msgs))
					if n != part.chars || sum != part.sha {
						t.Errorf("serialized %d chars (%s…), pi %d (%s…)", n, sum[:8], part.chars, part.sha[:8])
					}
					stats.serialized++
				}
			}
		})
	}
	t.Logf("identical: %d, nothing-to-compact (§5.6): %d, split-turn fix (§4.4): %d, serialized compared: %d, not comparable: %d",
		stats.same, stats.nothing, stats.splitFix, stats.serialized, stats.serializedSkipped)
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

func itoa(n int) string { return strconv.Itoa(n) }
