package credential

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// The tokens are built here rather than written out, so that the
// repository holds nothing a secret scanner takes for a leaked key.
func rep(s string, n int) string { return strings.Repeat(s, n) }

// TestIndex: each format in a line as config files and scripts hold
// them, and the near misses that ordinary text and code are made of.
func TestIndex(t *testing.T) {
	for s, want := range map[string]bool{
		"aws_access_key_id = AKIA" + rep("Q7", 8):                   true,
		`"AccessKeyId": "ASIA` + rep("Z9", 8) + `"`:                 true,
		"GITHUB_TOKEN=ghp_" + rep("aB3", 12):                        true,
		"token: github_pat_" + rep("x1_", 8):                        true,
		"glpat-" + rep("Ab-9", 5):                                   true,
		"SLACK=xoxb-1234567890-" + rep("a", 10):                     true,
		"stripe.api_key = 'sk_live_" + rep("9z", 12) + "'":          true,
		"STRIPE_KEY=sk_test_" + rep("9z", 12):                       true,
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
		if got := Index([]byte(s)); (got >= 0) != want {
			t.Errorf("Index(%q) = %d", s, got)
		}
	}
}

// TestIndexIsTheStart: Index points at the token's first byte, the first
// token's when there are several.
func TestIndexIsTheStart(t *testing.T) {
	for s, want := range map[string]int{
		"GITHUB_TOKEN=ghp_" + rep("aB3", 12):                                    13,
		"AKIA" + rep("Q7", 8):                                                   0,
		"sk-learn then hf_" + rep("h", 34) + " and AKIA" + rep("Q7", 8):         14,
		"AKIA" + rep("Q", 15) + " AKIA" + rep("Q7", 8) + " ghp_" + rep("a", 36): 20,
	} {
		if got := Index([]byte(s)); got != want {
			t.Errorf("Index(%q) = %d, want %d", s, got, want)
		}
	}
}

func TestIs(t *testing.T) {
	for value, want := range map[string]bool{
		"sk-proj-abcdefghijklmnop":                      true,
		"sk-ant-api03-abcdefghijk":                      true,
		"sk-svcacct-abcdefghijklmnop":                   true,
		"ghp_abcdefghijklmnopqrstuvwxyz0123":            true,
		"AKIAIOSFODNN7EXAMPLE":                          true,
		"  ASIAIOSFODNN7EXAMPLE\n":                      true,
		"Bearer abcdefghijklmnop":                       true,
		"token\t abcdefgh":                              true,
		"xoxb-1234567890-abcdefghij":                    true,
		"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NSJ9.abc": true,
		"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NSJ9.":    true,
		"sk_test_abcdefgh":                              true,
		"npm_" + rep("n7", 18):                          true,
		"info":                                          false, "gpt-4o-mini": false, "claude-haiku-4-5": false,
		"https://example.com": false, "skill": false, "OPENAI_API_KEY": false,
		"sk-abc": false, "sk-abcdefgh ijkl": false, "npm_" + rep("n7", 10): false,
		"Bearer short":                                  false,
		"Authorization: Bearer abcdefghijklmnop":        false,
		"Bearer abcdefgh ijklmnop":                      false,
		"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NSJ9":     false,
		"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NSJ9.a.b": false,
	} {
		if got := Is(value); got != want {
			t.Errorf("Is(%q) = %v, want %v", value, got, want)
		}
	}
}

// TestEveryFormatBothWays: a token of every format, at the shortest and
// (when set) the longest body the scan takes, using every byte its body
// may hold, is found in a text by Index and taken for a credential by Is;
// so is the shortest value Is is to mask. A format added to the table is
// checked the day it is added.
func TestEveryFormatBothWays(t *testing.T) {
	for _, f := range formats {
		if len(f.prefix) < 2 {
			t.Fatalf("%q: a prefix needs two bytes or more, tokenHere compares the second on its own", f.prefix)
		}
		var class []byte
		for c := range 256 {
			if f.body(byte(c)) {
				class = append(class, byte(c))
				if !alnumUnderDash(byte(c)) {
					t.Errorf("%s: body byte %q is no token byte, Is would not take the token", f.prefix, byte(c))
				}
			}
		}
		if f.valueMin > f.min {
			t.Errorf("%s: Is needs %d body bytes, more than the scan's %d", f.prefix, f.valueMin, f.min)
		}
		body := func(n int) string {
			b := make([]byte, n)
			for i := range b {
				b[i] = class[i%len(class)]
			}
			return string(b)
		}
		lengths := []int{f.min, f.max}
		if f.max == 0 {
			lengths = []int{f.min, f.min + len(class)}
		}
		for _, n := range lengths {
			token := f.prefix + body(n)
			if got := Index([]byte("key = " + token + "\n")); got != len("key = ") {
				t.Errorf("Index finds the %s token %q at %d", f.prefix, token, got)
			}
			if !Is(token) {
				t.Errorf("Is(%q) = false for a %s token", token, f.prefix)
			}
		}
		if short := f.prefix + body(f.valueMin); !Is(short) {
			t.Errorf("Is(%q) = false at the %s format's valueMin", short, f.prefix)
		}
	}
}

// TestShapesOnlyWhole: a header's value and a JWT are masked as values
// but do not make a text hold a token: HTTP examples and base64 of any
// JSON object would be refused with them.
func TestShapesOnlyWhole(t *testing.T) {
	for _, s := range []string{"Bearer abcdefghijklmnop", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NSJ9.abc"} {
		if !Is(s) {
			t.Errorf("Is(%q) = false", s)
		}
		if got := Index([]byte("curl -H 'Authorization: " + s + "'")); got >= 0 {
			t.Errorf("Index finds a token at %d in a text holding %q", got, s)
		}
	}
}

func BenchmarkIndex(b *testing.B) {
	// Go source: words, identifiers, and many an 's', 'g' and 'A' at a
	// word's start.
	line := []byte(strings.Repeat("\tif s.global != nil && strings.HasPrefix(name, \"Access\") { return gs.apply(args...) }\n", 64))
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		if Index(line) >= 0 {
			b.Fatal("a token in plain code")
		}
	}
}

// BenchmarkIndexRepeatedPrefix: a line of "AIza-" again and again, each
// at a word's start and inside the body run of the one before (AIza's
// body takes '-', and it has a longest length, so no run is a token).
// The throughput is the same at either length: Index's cost grows with
// the line, not with its square.
func BenchmarkIndexRepeatedPrefix(b *testing.B) {
	for _, size := range []int{4 << 10, 64 << 10} {
		line := []byte(rep("AIza-", size/5))
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
			b.SetBytes(int64(len(line)))
			for b.Loop() {
				if Index(line) >= 0 {
					b.Fatal("a token in a line of prefixes")
				}
			}
		})
	}
}

// class is a regular expression's class of the bytes of f's body.
func class(f format) string {
	var b strings.Builder
	b.WriteString("[")
	for c := range 256 {
		if f.body(byte(c)) {
			b.WriteString(regexp.QuoteMeta(string(rune(c))))
		}
	}
	return b.String() + "]"
}

// indexOracle is Index written as one regular expression per format:
// the prefix at a word's start, the body's bytes, then no more of them.
var indexOracle = func() []*regexp.Regexp {
	var out []*regexp.Regexp
	for _, f := range formats {
		c := class(f)
		n := fmt.Sprintf("{%d,}", f.min)
		if f.max > 0 {
			n = fmt.Sprintf("{%d}", f.max)
		}
		out = append(out, regexp.MustCompile(`(?:^|[^A-Za-z0-9_])`+regexp.QuoteMeta(f.prefix)+c+n+`(?:$|[^`+c[1:]+`)`))
	}
	return out
}()

func FuzzIndex(f *testing.F) {
	for _, s := range []string{"AKIA" + rep("Q7", 8), "x ghp_" + rep("a", 36) + " y", "sk-" + rep("a", 41), "xoxb-" + rep("1", 9), "AIza" + rep("S", 36), "_hf_" + rep("h", 40), "sk_test_" + rep("9z", 12) + " AKIA" + rep("Q7", 8)} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		want := -1
		for _, re := range indexOracle {
			loc := re.FindIndex(b)
			if loc == nil {
				continue
			}
			at := loc[0]
			if !wordByte[b[at]] { // the byte before the token
				at++
			}
			if want < 0 || at < want {
				want = at
			}
		}
		if got := Index(b); got != want {
			t.Fatalf("Index(%q) = %d, the regular expressions say %d", b, got, want)
		}
	})
}

// isOracle is Is as one regular expression: each format's prefix and
// valueMin token bytes, the header's value, the JWT.
var isOracle = func() *regexp.Regexp {
	var alt []string
	for _, f := range formats {
		alt = append(alt, regexp.QuoteMeta(f.prefix)+fmt.Sprintf(`[A-Za-z0-9_-]{%d,}`, f.valueMin))
	}
	alt = append(alt,
		`(?i:bearer|basic|token)\s+\S{8,}`,
		`eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]*`)
	return regexp.MustCompile(`^(?:` + strings.Join(alt, "|") + `)$`)
}()

func FuzzIs(f *testing.F) {
	for _, s := range []string{"sk-abcdefgh", " AKIAIOSFODNN7EXAMPLE ", "Bearer abcdefgh", "bAsIc\t\f abcdefg\xff", "toKen ſſſſſſſſ", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NSJ9.abc", "eyJ.eyJ."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := Is(s), isOracle.MatchString(strings.TrimSpace(s)); got != want {
			t.Fatalf("Is(%q) = %v, the regular expression says %v", s, got, want)
		}
	})
}
