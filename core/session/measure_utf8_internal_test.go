package session

import (
	"strings"
	"testing"

	"github.com/pith-dev/pith/core/tokens"
)

// utf8Cases cover each rule of RFC 3629: valid forms at the edges of
// each range and the invalid ones just past them, truncated sequences,
// stray continuation bytes.
var utf8Cases = []string{
	"é", "测试", "😀", "кириллица", "한국어", "𝔘𝔫𝔦", "👩‍💻",
	"\xc0\x80", "\xc1\xbf", "\xc2\x80", "\xdf\xbf",
	"\xe0\x80\x80", "\xe0\x9f\xbf", "\xe0\xa0\x80", "\xed\x9f\xbf", "\xed\xa0\x80", "\xed\xbf\xbf", "\xee\x80\x80",
	"\xf0\x80\x80\x80", "\xf0\x8f\xbf\xbf", "\xf0\x90\x80\x80", "\xf4\x8f\xbf\xbf", "\xf4\x90\x80\x80",
	"\xf5\x80\x80\x80", "\xf8\x80\x80\x80\x80", "\xff", "\x80", "\xbf", "\xc2", "\xe3\x81", "\xf0\x9f\x98",
	"\xc2\xc2\x80", "\xe3\x81\x81\x81", "\xf0\x9f\x98\x80\x80",
}

// checkStringUnits compares stringUnits on the string literal at the
// start of buf with str (the same end and the same error) and with
// tokens.StringUnits, which decodes the text rune by rune as utf8 does.
func checkStringUnits(t *testing.T, buf []byte) {
	t.Helper()
	ref := &scanner{s: buf}
	ref.str()
	p := &scanner{s: buf}
	got, printed := p.stringUnits()
	if p.err != ref.err || p.i != ref.i || p.errAt != ref.errAt {
		t.Fatalf("%q: stringUnits ends at %d (%q), str at %d (%q)", buf, p.i, p.err, ref.i, ref.err)
	}
	if p.err != "" {
		return
	}
	if want := tokens.StringUnits(buf[1 : p.i-1]); got != want {
		t.Fatalf("%q: stringUnits %d, decoded %d", buf, got, want)
	}
	if want := tokens.StringifiedLen(buf[:p.i]); printed != want {
		t.Fatalf("%q: stringUnits prints %d, StringifiedLen %d", buf, printed, want)
	}
}

// TestStringUnitsUTF8 moves each case through every lane of a word and
// across word boundaries, next to escapes and the string's end, with
// and without bytes after the string (the buffer's last eight bytes are
// scanned one at a time).
func TestStringUnitsUTF8(t *testing.T) {
	for _, c := range utf8Cases {
		for pad := 0; pad < 18; pad++ {
			for _, tail := range []string{"", "x", `\n`, `\u00e9x`, "xxxxxxxxxxxxxxxxx", "é", c, `\"` + c} {
				for _, after := range []string{"", `,"k":1}`, `,"k":"0123456789abcdef"}`} {
					checkStringUnits(t, []byte(`"`+strings.Repeat("a", pad)+c+tail+`"`+after))
				}
			}
		}
	}
}

// escapeCases print in each way JSON.stringify has: again as the escape,
// as the character, as \u00XX, and surrogates paired, lone or broken.
var escapeCases = []string{
	`\"`, `\\`, `\/`, `\b\f\n\r\t`, `\u0022`, `\u005c`, `\u005C`, `\u002f`, `\u0008`, `\u000a`, `\u0001`, `\u001f`,
	`\u0020`, `\u007f`, `\u00e9`, `\u2028`, `\uffff`, `\ud83d\ude00`, `\uD83D\uDE00`, `\udbff\udfff`, `\ud83d`, `\ude00`,
	`\ud83d\ud83d\ude00`, `\ude00\ud83d`, `\ud83dx`, `\ud83d\u0041`, `\ud83d\n`, `\ud83d\uzzzz`, `\ud83d\u`,
}

// TestStringUnitsEscapes moves each escape through the lanes of a word,
// next to the string's end and to non-ASCII text.
func TestStringUnitsEscapes(t *testing.T) {
	for _, c := range escapeCases {
		for pad := 0; pad < 18; pad++ {
			for _, tail := range []string{"", "x", "é", "😀", c, "xxxxxxxxxxxxxxxxx"} {
				checkStringUnits(t, []byte(`"`+strings.Repeat("a", pad)+c+tail+`"`))
				checkStringUnits(t, []byte(`"`+strings.Repeat("a", pad)+c+tail+`",0123456789`))
			}
		}
	}
}

func FuzzStringUnits(f *testing.F) {
	for _, c := range escapeCases {
		f.Add([]byte(`abc` + c + `😀d",0123456789`))
	}
	for _, c := range utf8Cases {
		f.Add([]byte(`"abcdefg` + c + `hij\nklmnopq` + c + `",0123456789`))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkStringUnits(t, append([]byte(`"`), b...))
	})
}
