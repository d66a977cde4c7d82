package termsafe

import (
	"bytes"
	"strings"
	"testing"
)

func TestEscape(t *testing.T) {
	for _, tc := range []struct{ in, text, line string }{
		{"plain text, café, 日本語, emoji 👩‍💻", "plain text, café, 日本語, emoji 👩‍💻", "plain text, café, 日本語, emoji 👩‍💻"},
		{"a\tb\nc", "a\tb\nc", `a` + "\t" + `b\x0ac`},
		{"\x1b[2J\x07\x00\r\x7f", `\x1b[2J\x07\x00\x0d\x7f`, `\x1b[2J\x07\x00\x0d\x7f`},
		{"\u009b31m\u0085", `\u009b31m\u0085`, `\u009b31m\u0085`},
		{"abc\u202edcba\u2066\u2069\u200e\u061c", `abc\u202edcba\u2066\u2069\u200e\u061c`, `abc\u202edcba\u2066\u2069\u200e\u061c`},
		{"zero\u200bwidth\ufeff\u2060\U000e0041", `zero\u200bwidth\ufeff\u2060\U000e0041`, `zero\u200bwidth\ufeff\u2060\U000e0041`},
		{"line\u2028para\u2029", `line\u2028para\u2029`, `line\u2028para\u2029`},
		{"bad \xff\x9b byte", `bad \xff\x9b byte`, `bad \xff\x9b byte`},
		{"private \ue000 unassigned \U0010ffff", `private \ue000 unassigned \U0010ffff`, `private \ue000 unassigned \U0010ffff`},
		{`a \x1b literal`, `a \x1b literal`, `a \x1b literal`},
	} {
		if got := Text(tc.in); got != tc.text {
			t.Errorf("Text(%q) = %q, want %q", tc.in, got, tc.text)
		}
		if got := Line(tc.in); got != tc.line {
			t.Errorf("Line(%q) = %q, want %q", tc.in, got, tc.line)
		}
	}
}

func TestWriter(t *testing.T) {
	var b bytes.Buffer
	w := NewWriter(&b)
	in := "[WARN]  pith: \x1b]0;title\x07 msg: key=\n  | line\n"
	if n, err := w.Write([]byte(in)); err != nil || n != len(in) {
		t.Fatalf("Write = %d, %v", n, err)
	}
	if want := "[WARN]  pith: \\x1b]0;title\\x07 msg: key=\n  | line\n"; b.String() != want {
		t.Errorf("wrote %q, want %q", b.String(), want)
	}
}

func FuzzLine(f *testing.F) {
	f.Add("\x1b[31m\u202e\xff\n")
	f.Fuzz(func(t *testing.T, s string) {
		out := Line(s)
		for _, r := range out {
			if r < 0x20 && r != '\t' || r == 0x7f || r >= 0x80 && r < 0xa0 || r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069 || r == 0xfffd && !strings.ContainsRune(s, 0xfffd) {
				t.Fatalf("Line(%q) = %q holds %U", s, out, r)
			}
		}
	})
}

// BenchmarkLine: a preview-sized line with nothing to escape (the common
// case: no allocation) and one with escapes.
func BenchmarkLine(b *testing.B) {
	clean := strings.Repeat("an ordinary line of session text, café ", 4)
	dirty := strings.Repeat("text \x1b[31mred\x1b[0m \u202e ", 8)
	b.Run("clean", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			_ = Line(clean)
		}
	})
	b.Run("escapes", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			_ = Line(dirty)
		}
	})
}
