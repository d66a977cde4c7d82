package sessiongen

import (
	"encoding/base64"
	"math/rand/v2"
	"strings"
	"unicode/utf8"
)

// words mixes plain English with the characters that break naive
// implementations: multi-byte Latin, CJK, astral-plane emoji (two UTF-16
// units each), HTML-ish characters, quotes, backslashes and an ANSI escape.
var words = []string{
	"the", "session", "compaction", "summary", "file", "function", "return", "error", "value",
	"context", "token", "branch", "leaf", "entry", "message", "tool", "result", "read", "write",
	"edit", "build", "test", "failed", "passed", "config", "handler", "request", "response",
	"café", "naïve", "résumé", "Straße", "Ελληνικά", "кириллица", "日本語", "测试", "한국어",
	"データ", "😀", "🚀", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "👩‍💻", "<div>", "a&b", "x<y", "if(a>b)", "\"quoted\"",
	"back\\slash", "path/to/file", "tab\tsep", "\u001b[31mred\u001b[0m", "50%", "$HOME", "#42",
	"func", "const", "let", "await", "async", "import", "package", "struct", "interface",
}

// corpus is a block of generated text that long strings are sliced from, so
// that a 200 KB tool result costs a slice, not 40 000 random draws.
type corpus struct {
	text string
	b64  string
}

func newCorpus(r *rand.Rand, size int) *corpus {
	var sb strings.Builder
	sb.Grow(size + 64)
	col := 0
	for sb.Len() < size {
		w := words[r.IntN(len(words))]
		sb.WriteString(w)
		col += len(w)
		switch {
		case col > 70 || r.IntN(40) == 0:
			sb.WriteByte('\n')
			col = 0
		case r.IntN(12) == 0:
			sb.WriteString(". ")
		default:
			sb.WriteByte(' ')
		}
	}
	raw := make([]byte, 48*1024)
	for i := range raw {
		raw[i] = byte(r.Uint32())
	}
	return &corpus{text: sb.String(), b64: base64.StdEncoding.EncodeToString(raw)}
}

// slice returns about n bytes of corpus text starting at a random rune
// boundary. Requests larger than the corpus are served by repetition.
func (c *corpus) slice(r *rand.Rand, n int) string {
	if n <= 0 {
		return ""
	}
	if n >= len(c.text) {
		return strings.Repeat(c.text, n/len(c.text)) + c.slice(r, n%len(c.text))
	}
	start := r.IntN(len(c.text) - n + 1)
	for start > 0 && !utf8.RuneStart(c.text[start]) {
		start--
	}
	end := start + n
	for end < len(c.text) && !utf8.RuneStart(c.text[end]) {
		end++
	}
	return c.text[start:end]
}

// sentence returns a short phrase of k words.
func sentence(r *rand.Rand, k int) string {
	var sb strings.Builder
	for i := 0; i < k; i++ {
		if i > 0 {
			sb.WriteByte(' ')
		}
		sb.WriteString(words[r.IntN(len(words))])
	}
	return sb.String()
}

// imageData returns base64 data of about n bytes (a multiple of 4).
func (c *corpus) imageData(r *rand.Rand, n int) string {
	n = n &^ 3
	if n <= 0 {
		n = 4
	}
	if n > len(c.b64) {
		n = len(c.b64) &^ 3
	}
	start := r.IntN((len(c.b64)-n)/4+1) * 4
	return c.b64[start : start+n]
}

// paths used by file tool calls. They include spaces, CJK, an astral emoji
// and a full-width character: JavaScript sorts "😀" before "！" (UTF-16
// order) while a byte-wise sort puts it after.
var paths = []string{
	"/repo/src/main.go", "/repo/src/session/store.go", "/repo/src/session/parse.go",
	"/repo/README.md", "/repo/docs/設計.md", "/repo/docs/😀-notes.md", "/repo/docs/！important.md",
	"/repo/web/index.html", "/repo/web/app & more.ts", "/repo/config/settings.json",
	"/repo/core/compaction/cut.go", "/repo/core/tokens/estimate.go", "src/relative/file.ts",
	"/repo/テスト/ケース.txt", "/repo/naïve/café.py", "/repo/Makefile",
}
