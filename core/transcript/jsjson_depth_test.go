package transcript

import (
	"strings"
	"testing"

	"github.com/pith-dev/pith/core/jsondepth"
)

// TestParseJSNesting: tool-call arguments are re-rendered up to the nesting
// limit; one level more, or 30 million, is refused (the caller falls back
// to the raw text), never a stack overflow.
func TestParseJSNesting(t *testing.T) {
	at := strings.Repeat("[", jsondepth.Max) + strings.Repeat("]", jsondepth.Max)
	v, ok := parseJS(at)
	if !ok {
		t.Fatal("depth Max refused")
	}
	var b strings.Builder
	v.stringify(&b)
	if b.String() != at {
		t.Error("depth Max did not round-trip")
	}
	if _, ok := parseJS("[" + at + "]"); ok {
		t.Error("depth Max+1 accepted")
	}
	if _, ok := parseJS(`{"a":` + strings.Repeat("[", 30_000_000)); ok {
		t.Error("30 million levels accepted")
	}
	// The walk depth is per value: siblings at the limit are fine.
	if _, ok := parseJS("[" + strings.Repeat("[", jsondepth.Max-1) + strings.Repeat("]", jsondepth.Max-1) + "," + strings.Repeat("[", jsondepth.Max-1) + strings.Repeat("]", jsondepth.Max-1) + "]"); !ok {
		t.Error("two siblings at the limit refused")
	}
}
