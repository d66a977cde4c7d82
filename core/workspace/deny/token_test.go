package deny

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// The tokens are built here rather than written out, so that the
// repository holds nothing a secret scanner takes for a leaked key.
func rep(s string, n int) string { return strings.Repeat(s, n) }

// TestTokenAt: each format in a line as config files and scripts hold
// them, and the near misses that ordinary text and code are made of.
func TestTokenAt(t *testing.T) {
	for s, want := range map[string]bool{
		"aws_access_key_id = AKIA" + rep("Q7", 8):                   true,
		`"AccessKeyId": "ASIA` + rep("Z9", 8) + `"`:                 true,
		"GITHUB_TOKEN=ghp_" + rep("aB3", 12):                        true,
		"token: github_pat_" + rep("x1_", 8):                        true,
		"glpat-" + rep("Ab-9", 5):                                   true,
		"SLACK=xoxb-1234567890-" + rep("a", 10):                     true,
		"stripe.api_key = 'sk_live_" + rep("9z", 12) + "'":          true,
		"ANTHROPIC_API_KEY=sk-ant-api03-" + rep("Q_w-", 10):         true,
		"OPENAI_API_KEY=sk-proj-" + rep("k2", 20):                   true,
		"openai.api_key = \"sk-" + rep("T3", 24) + "\"":             true,
		"key=AIza" + rep("S", 35):                                   true,
		"//registry.npmjs.org/:_authToken=npm_" + rep("n7", 18):     true,
		"HF_TOKEN=hf_" + rep("h", 34):                               true,
		"password: pypi-AgEIcHlwaS5vcmc" + rep("B", 50):             true,
		"AKIA" + rep("Q7", 8) + "X":                                 false, // 17 characters: not a key id
		"AKIA" + rep("Q", 15):                                       false,
		"xAKIA" + rep("Q7", 8):                                      false, // inside a word
		"the AKIA prefix marks a long-lived AWS key":                false,
		"ghp_ tokens are 40 characters":                             false,
		"ghp_" + rep("a", 35):                                       false,
		"import sk-learn; disk-" + rep("0", 40):                     false,
		"my_sk-" + rep("a", 40):                                     false,
		"AIza" + rep("S", 36):                                       false,
		"func TestCompactServeLeavesOtherClientsAndAnAgentWatching": false,
		"xoxb-short":                    false,
		"sha512-" + rep("Zm9v", 22):     false,
		"":                              false,
		"sk_live_":                      false,
		"-----BEGIN PUBLIC KEY-----":    false,
		"hf_" + rep("h", 20) + " other": false,
	} {
		if got := tokenAt([]byte(s)); got != want {
			t.Errorf("tokenAt(%q) = %v", s, got)
		}
	}
}

// TestRefusesContentTokens: the built-in list refuses a token; a list
// without the defaults (workspace.denyDefaults: false) does not.
func TestRefusesContentTokens(t *testing.T) {
	line := []byte("export GITHUB_TOKEN=ghp_" + rep("aB3", 12) + "\n")
	if !Builtin().RefusesContent(line) {
		t.Error("the built-in list does not refuse a GitHub token")
	}
	own, err := New([]string{"secrets.*"}, false)
	if err != nil {
		t.Fatal(err)
	}
	if own.RefusesContent(line) {
		t.Error("a list without the defaults refuses a token")
	}
}

func BenchmarkTokenAt(b *testing.B) {
	// Go source: words, identifiers, and many an 's', 'g' and 'A' at a
	// word's start.
	line := []byte(strings.Repeat("\tif s.global != nil && strings.HasPrefix(name, \"Access\") { return gs.apply(args...) }\n", 64))
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		if tokenAt(line) {
			b.Fatal("a token in plain code")
		}
	}
}

// tokenOracle is tokenAt written as one regular expression per format:
// the prefix at a word's start, the body's bytes, then no more of them.
var tokenOracle = func() []*regexp.Regexp {
	var out []*regexp.Regexp
	class := func(f tokenFormat) string {
		var b strings.Builder
		b.WriteString("[")
		for c := range 256 {
			if f.bodyChar(byte(c)) {
				b.WriteString(regexp.QuoteMeta(string(rune(c))))
			}
		}
		return b.String() + "]"
	}
	for _, f := range tokenFormats {
		c := class(f)
		n := fmt.Sprintf("{%d,}", f.min)
		if f.max > 0 {
			n = fmt.Sprintf("{%d}", f.max)
		}
		out = append(out, regexp.MustCompile(`(?:^|[^A-Za-z0-9_])`+regexp.QuoteMeta(f.prefix)+c+n+`(?:$|[^`+c[1:]+`)`))
	}
	return out
}()

func FuzzTokenAt(f *testing.F) {
	for _, s := range []string{"AKIA" + rep("Q7", 8), "x ghp_" + rep("a", 36) + " y", "sk-" + rep("a", 41), "xoxb-" + rep("1", 9), "AIza" + rep("S", 36), "_hf_" + rep("h", 40)} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		want := false
		for _, re := range tokenOracle {
			if re.Match(b) {
				want = true
				break
			}
		}
		if got := tokenAt(b); got != want {
			t.Fatalf("tokenAt(%q) = %v, the regular expressions say %v", b, got, want)
		}
	})
}
