package deny

// Credentials that are not files of their own: an API token pasted into a
// config file, a script or a test. The formats below are those whose
// prefix and length leave little doubt (cloud, code host, chat, payment
// and model-provider tokens); a file holding one is refused as one
// holding a private key is. Generic "password = ..." lines are not
// looked for: too much ordinary code looks like them. config's
// looksSecret knows the same formats more loosely, on purpose: there a
// false positive only masks a value on screen, here it hides a file.

// tokenFormat is one token format: a literal prefix, then a body of
// bodyChar bytes at least min long (and at most max, when set).
type tokenFormat struct {
	prefix   string
	min, max int
	bodyChar func(byte) bool
}

func alnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
func upperDigit(c byte) bool     { return c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' }
func alnumUnder(c byte) bool     { return alnum(c) || c == '_' }
func alnumDash(c byte) bool      { return alnum(c) || c == '-' }
func alnumUnderDash(c byte) bool { return alnum(c) || c == '_' || c == '-' }

var tokenFormats = []tokenFormat{
	{"AKIA", 16, 16, upperDigit}, // AWS access key id (long-lived)
	{"ASIA", 16, 16, upperDigit}, // AWS access key id (temporary)
	{"ghp_", 36, 0, alnum},       // GitHub personal access token
	{"gho_", 36, 0, alnum},       // GitHub OAuth token
	{"ghu_", 36, 0, alnum},       // GitHub user-to-server token
	{"ghs_", 36, 0, alnum},       // GitHub server-to-server token
	{"ghr_", 36, 0, alnum},       // GitHub refresh token
	{"github_pat_", 22, 0, alnumUnder},
	{"glpat-", 20, 0, alnumUnderDash}, // GitLab personal access token
	{"xoxb-", 10, 0, alnumDash},       // Slack bot token
	{"xoxp-", 10, 0, alnumDash},       // Slack user token
	{"xoxa-", 10, 0, alnumDash},
	{"xoxr-", 10, 0, alnumDash},
	{"xoxs-", 10, 0, alnumDash},
	{"sk_live_", 24, 0, alnum}, // Stripe secret key
	{"rk_live_", 24, 0, alnum}, // Stripe restricted key
	{"sk-ant-", 32, 0, alnumUnderDash},
	{"sk-proj-", 32, 0, alnumUnderDash},
	{"sk-", 40, 0, alnum},                           // OpenAI's older keys
	{"AIza", 35, 35, alnumUnderDash},                // Google API key
	{"npm_", 36, 0, alnum},                          // npm access token
	{"hf_", 34, 0, alnum},                           // Hugging Face token
	{"pypi-AgEIcHlwaS5vcmc", 50, 0, alnumUnderDash}, // PyPI API token
}

// byFirst are the formats by the first byte of their prefix: the scan
// looks further only at a word's start with one of them.
var byFirst = func() (t [256][]tokenFormat) {
	for _, f := range tokenFormats {
		t[f.prefix[0]] = append(t[f.prefix[0]], f)
	}
	return t
}()

// starts marks the first bytes of byFirst, wordByte the bytes a word is
// made of: tables, as the scan looks at every byte of every line read.
var starts, wordByte = func() (st, wb [256]bool) {
	for c := range 256 {
		st[c] = byFirst[c] != nil
		wb[c] = alnumUnder(byte(c))
	}
	return st, wb
}()

// tokenAt reports whether b holds a token of a format above, starting a
// word (not preceded by a letter, digit or '_') and ending one (its body
// is all of the run of body bytes, within min and max).
func tokenAt(b []byte) bool {
	prev := byte(' ')
	for i, c := range b {
		if starts[c] && !wordByte[prev] {
			for _, f := range byFirst[c] {
				if tokenHere(b[i:], f) {
					return true
				}
			}
		}
		prev = c
	}
	return false
}

// tokenHere reports whether b starts with a token of format f.
func tokenHere(b []byte, f tokenFormat) bool {
	if len(b) < len(f.prefix)+f.min || string(b[:len(f.prefix)]) != f.prefix {
		return false
	}
	n := 0
	for _, c := range b[len(f.prefix):] {
		if !f.bodyChar(c) {
			break
		}
		n++
	}
	return n >= f.min && (f.max == 0 || n == f.max)
}
