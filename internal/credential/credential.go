// Package credential knows what a credential looks like: the formats of
// API tokens, defined once, and two questions over them.
//
//   - Index: where in a text does a token start. The workspace deny list
//     refuses a file holding one, so a false positive hides a file: a
//     token counts only at its full length, at a word's start.
//   - Is: does a whole value look like a credential. `pith config show`
//     and errors mask such a value, and a false positive only masks a
//     value on screen, so Is is looser: shorter bodies, any token byte in
//     them, and two shapes that carry no prefix of their own (an
//     Authorization header's value, a JWT), which in a text would match
//     too much ordinary content (HTTP examples, base64 of any JSON) to
//     refuse files for.
//
// A format added to the table below is known to both.
//
// Generic "password = ..." lines are not looked for: too much ordinary
// code looks like them. Names that hold a credential (GITHUB_TOKEN,
// --api-key) are the caller's knowledge: config masks by name as well.
//
// Standard library only: core/workspace/deny, which the plugin SDK hands
// to plugins, imports it.
package credential

// format is one token format: a literal prefix, then a body of body bytes.
// In a text (Index) the body is the whole run of body bytes after the
// prefix, at least min long and exactly max when max is set. A whole
// value (Is) needs only valueMin bytes of any token byte after the prefix.
type format struct {
	prefix   string
	body     func(byte) bool
	min, max int
	valueMin int
}

func alnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
func upperDigit(c byte) bool     { return c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' }
func alnumUnder(c byte) bool     { return alnum(c) || c == '_' }
func alnumDash(c byte) bool      { return alnum(c) || c == '-' }
func alnumUnderDash(c byte) bool { return alnum(c) || c == '_' || c == '-' }

// The formats whose prefix and length leave little doubt: cloud, code
// host, chat, payment and model-provider tokens. valueMin is below min
// where masking has long taken a shorter value for a token (a test's or
// a truncated key is still worth hiding); a format new to masking gets
// min, as sure as the scan.
var formats = []format{
	{"AKIA", upperDigit, 16, 16, 16}, // AWS access key id (long-lived)
	{"ASIA", upperDigit, 16, 16, 16}, // AWS access key id (temporary)
	{"ghp_", alnum, 36, 0, 20},       // GitHub personal access token
	{"gho_", alnum, 36, 0, 20},       // GitHub OAuth token
	{"ghu_", alnum, 36, 0, 20},       // GitHub user-to-server token
	{"ghs_", alnum, 36, 0, 20},       // GitHub server-to-server token
	{"ghr_", alnum, 36, 0, 20},       // GitHub refresh token
	{"github_pat_", alnumUnder, 22, 0, 20},
	{"glpat-", alnumUnderDash, 20, 0, 20}, // GitLab personal access token
	{"xoxb-", alnumDash, 10, 0, 10},       // Slack bot token
	{"xoxp-", alnumDash, 10, 0, 10},       // Slack user token
	{"xoxa-", alnumDash, 10, 0, 10},
	{"xoxr-", alnumDash, 10, 0, 10},
	{"xoxs-", alnumDash, 10, 0, 10},
	{"sk_live_", alnum, 24, 0, 8}, // Stripe secret key
	{"sk_test_", alnum, 24, 0, 8}, // Stripe secret key, test mode
	{"rk_live_", alnum, 24, 0, 8}, // Stripe restricted key
	{"sk-ant-", alnumUnderDash, 32, 0, 8},
	{"sk-proj-", alnumUnderDash, 32, 0, 8},
	{"sk-", alnum, 40, 0, 8},                            // OpenAI's older keys
	{"AIza", alnumUnderDash, 35, 35, 30},                // Google API key
	{"npm_", alnum, 36, 0, 36},                          // npm access token
	{"hf_", alnum, 34, 0, 34},                           // Hugging Face token
	{"pypi-AgEIcHlwaS5vcmc", alnumUnderDash, 50, 0, 50}, // PyPI API token
}
