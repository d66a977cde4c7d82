package session

import (
	"testing"

	"github.com/pith-dev/pith/core/tokens"
)

// printedCases are argument values where printing parts from the source:
// numbers JavaScript writes differently, keys met twice (escaped or not),
// whitespace, nesting, escapes and non-ASCII text.
var printedCases = []string{
	`{}`, `[]`, `{"path":"a/b"}`, ` { "path" : "a/b" , "n" : 1 } `, `"a string"`, `7`, `null`, `true`, `false`,
	`{"n":1.50,"m":-0,"e":1e3,"E":2E-7,"big":123456789012345678901,"int":123456789012345,"int16":1234567890123456}`,
	`{"x":[1,-0.5,1e21,1e-7,0.000001,-1.5e300,1e400,-1e400,0,-0,10,100e-2]}`,
	`{"a":1,"a":"longer value","b":{"a":2,"a":[]}}`, `{"\u0061":1,"a":2}`, `{"a\/b":1,"a/b":2}`, `{"\ud83d\ude00":1,"😀":2}`,
	`{"path":"first","path":"last"}`, `{"path":7}`, `{"path":"\u0070ath é"}`, `{"p\u0061th":"escaped key"}`,
	`{"content":"line\nline\t\"quoted\" \\ back\/slash \u0001 \u001f \u2028 😀 测试 \ud83d"}`,
	`[[[[{"a":[{"b":null}]}]]]]`, `{"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k1":10}`,
}

// checkPrinted compares printed on the value at the start of buf with
// value (the same end and error) and, for a valid value, with
// tokens.StringifiedLen.
func checkPrinted(t *testing.T, buf []byte) {
	t.Helper()
	ref := &scanner{s: buf}
	ref.value(4)
	p := &scanner{s: buf}
	var path string
	got := p.arguments(&path)
	if p.err != ref.err || p.i != ref.i || p.errAt != ref.errAt {
		t.Fatalf("%q: printed ends at %d (%q), value at %d (%q)", buf, p.i, p.err, ref.i, ref.err)
	}
	if p.err != "" {
		return
	}
	if want := pathMember(buf); path != want {
		t.Fatalf("%q: path %q, want %q", buf, path, want)
	}
	if want := tokens.StringifiedLen(buf[:p.i]); got != want {
		t.Fatalf("%q: printed %d, StringifiedLen %d", buf, got, want)
	}
}

func TestPrinted(t *testing.T) {
	for _, c := range printedCases {
		checkPrinted(t, []byte(c))
		checkPrinted(t, []byte(c+`,"after":1}`))
	}
	for _, bad := range []string{`{"a":}`, `{"a":1,}`, `[1,]`, `{"a":"\x"}`, `01`, `-`, `tru`, `{"a" 1}`, `[`, `{`, `"`, `{"a":[1 2]}`} {
		checkPrinted(t, []byte(bad))
	}
}

// FuzzPrinted: printed validates as value does and, on what it accepts,
// agrees with tokens.StringifiedLen.
func FuzzPrinted(f *testing.F) {
	for _, c := range printedCases {
		f.Add([]byte(c))
	}
	f.Fuzz(checkPrinted)
}

// pathMember is the last string "path" member of the object at the start
// of buf, as toolCalls reads it without measuring.
func pathMember(buf []byte) (path string) {
	p := &scanner{s: buf}
	if len(buf) > 0 && buf[0] == '{' {
		p.object(4, func(k []byte, esc bool) bool {
			if string(keyText(k, esc)) != "path" {
				return false
			}
			path, _ = p.stringValue(5)
			return true
		})
	}
	return path
}
