package branch

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"unicode/utf16"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/core/transcript"
	"github.com/tidwall/gjson"
)

// piCase is one record of testdata/golden/pi-branch.json, made by
// conformance/branch.mjs from pi 0.73.1's collectEntriesForBranchSummary
// and prepareBranchEntries.
type piCase struct {
	File               string   `json:"file"`
	OldLeafID          string   `json:"oldLeafId"`
	TargetID           string   `json:"targetId"`
	TargetRelation     string   `json:"targetRelation"`
	Budget             int      `json:"budget"`
	BudgetKind         string   `json:"budgetKind"`
	CommonAncestorID   *string  `json:"commonAncestorId"`
	EntriesToSummarize int      `json:"entriesToSummarize"`
	EntryIDs           []string `json:"entryIds"`
	Messages           int      `json:"messages"`
	MessageRoles       []string `json:"messageRoles"`
	Tokens             int      `json:"tokens"`
	OverBudget         bool     `json:"overBudget"`
	Serialized         struct {
		Chars  int    `json:"chars"`
		SHA256 string `json:"sha256"`
	} `json:"serialized"`
	ReadFiles     []string `json:"readFiles"`
	ModifiedFiles []string `json:"modifiedFiles"`
}

func loadPiCases(t testing.TB) []piCase {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "golden", "pi-branch.json"))
	if err != nil {
		t.Fatal(err)
	}
	var g struct {
		Cases []piCase `json:"cases"`
	}
	if err := json.Unmarshal(data, &g); err != nil {
		t.Fatalf("pi-branch.json: %v", err)
	}
	if len(g.Cases) == 0 {
		t.Fatal("pi-branch.json has no cases")
	}
	return g.Cases
}

var (
	treesMu sync.Mutex
	trees   = map[string]*session.Tree{}
)

// generatedTree loads testdata/generated/<file> once per test binary.
func generatedTree(t testing.TB, file string) *session.Tree {
	t.Helper()
	treesMu.Lock()
	defer treesMu.Unlock()
	if tr, ok := trees[file]; ok {
		return tr
	}
	f, err := session.Load(filepath.Join("testdata", "generated", file))
	if err != nil {
		t.Fatal(err)
	}
	tr := session.NewTree(f.Entries)
	trees[file] = tr
	return tr
}

// TestPrepareMatchesPi compares Collect and Prepare with pi on every golden
// case: the entries collected, the common ancestor, the messages selected
// under the budget (roles and count), their tokens, the file lists, and —
// where Pith renders like the reference — the serialized conversation.
func TestPrepareMatchesPi(t *testing.T) {
	kinds := map[string]int{}
	var serialized, notComparable int
	for i, g := range loadPiCases(t) {
		name := g.File + "/" + g.TargetRelation + "/" + g.BudgetKind + "/" + strconv.Itoa(i)
		t.Run(name, func(t *testing.T) {
			tree := generatedTree(t, g.File)
			if last := tree.Last(); last == nil || last.ID != g.OldLeafID {
				t.Fatalf("last entry is not pi's leaf %s", g.OldLeafID)
			}
			entries, ancestor := CollectEntriesForBranchSummary(tree, g.OldLeafID, g.TargetID)
			want := ""
			if g.CommonAncestorID != nil {
				want = *g.CommonAncestorID
			}
			if ancestor != want {
				t.Errorf("common ancestor %q, pi %q", ancestor, want)
			}
			if ids := entryIDs(entries); !slices.Equal(ids, nonNil(g.EntryIDs)) {
				t.Fatalf("entries %v, pi %v", ids, g.EntryIDs)
			}
			p := PrepareBranchEntries(entries, g.Budget)
			if roles := messageRoles(p.Messages); !slices.Equal(roles, nonNil(g.MessageRoles)) {
				t.Errorf("message roles %v, pi %v", roles, g.MessageRoles)
			}
			if p.TotalTokens != g.Tokens {
				t.Errorf("tokens %d, pi %d", p.TotalTokens, g.Tokens)
			}
			if (p.TotalTokens > g.Budget) != g.OverBudget {
				t.Errorf("over budget %v, pi %v", p.TotalTokens > g.Budget, g.OverBudget)
			}
			if !slices.Equal(nonNil(p.ReadFiles), nonNil(g.ReadFiles)) {
				t.Errorf("read files %q, pi %q", p.ReadFiles, g.ReadFiles)
			}
			if !slices.Equal(nonNil(p.ModifiedFiles), nonNil(g.ModifiedFiles)) {
				t.Errorf("modified files %q, pi %q", p.ModifiedFiles, g.ModifiedFiles)
			}
			if serializesLikePi(p.Messages) {
				n, sum := digest(transcript.SerializeConversation(p.Messages))
				if n != g.Serialized.Chars || sum != g.Serialized.SHA256 {
					t.Errorf("serialized %d chars (%s…), pi %d (%s…)", n, sum[:8], g.Serialized.Chars, g.Serialized.SHA256[:8])
				}
				serialized++
			} else {
				notComparable++
			}
			kinds[g.BudgetKind]++
		})
	}
	for _, k := range []string{"default", "small", "cutMessage", "ninetyTake", "ninetyRefuse"} {
		if kinds[k] == 0 {
			t.Errorf("no golden case of budget kind %s", k)
		}
	}
	t.Logf("cases by budget kind: %v; serialized compared: %d, not comparable (summary frames, clipped parts): %d",
		kinds, serialized, notComparable)
}

func entryIDs(entries []*session.Entry) []string {
	ids := []string{}
	for _, e := range entries {
		ids = append(ids, e.ID)
	}
	return ids
}

func messageRoles(msgs []session.Message) []string {
	roles := []string{}
	for _, m := range msgs {
		roles = append(roles, m.Role)
	}
	return roles
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func units(s string) int { return len(utf16.Encode([]rune(s))) }

func digest(s string) (int, string) {
	h := sha256.Sum256([]byte(s))
	return units(s), hex.EncodeToString(h[:])
}

// serializesLikePi reports whether transcript.SerializeConversation
// renders msgs as the reference does. It does not when a summary message is
// present (Pith's own frame wording) or when thinking, custom or bash text
// is long enough for Pith to clip it (docs/behaviour.md §6).
func serializesLikePi(msgs []session.Message) bool {
	for _, m := range msgs {
		r := gjson.ParseBytes(m.Raw)
		switch m.Role {
		case session.RoleBranchSummary, session.RoleCompactionSummary:
			return false
		case session.RoleCustom:
			if contentUnits(r.Get("content")) > transcript.MaxPartChars {
				return false
			}
		case session.RoleBashExecution:
			if units(r.Get("output").String()) > transcript.MaxPartChars {
				return false
			}
		case session.RoleAssistant:
			n, parts := 0, 0
			r.Get("content").ForEach(func(_, b gjson.Result) bool {
				if b.Get("type").Str == "thinking" {
					n += units(b.Get("thinking").String())
					parts++
				}
				return true
			})
			if n+parts > transcript.MaxPartChars {
				return false
			}
		}
	}
	return true
}

func contentUnits(c gjson.Result) int {
	if c.Type == gjson.String {
		return units(c.Str)
	}
	n := 0
	c.ForEach(func(_, b gjson.Result) bool {
		if b.Get("type").Str == "text" {
			n += units(b.Get("text").String())
		}
		return true
	})
	return n
}
