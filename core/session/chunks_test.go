package session

import (
	"bytes"
	"fmt"
	"reflect"
	"runtime"
	"testing"
)

// TestChunkLineNumbers parses a file large enough to be split across
// cores, with skipped lines and empty lines throughout, and checks that
// every entry, warning and skipped line has the line number a parse in
// one piece gives it: the pieces number their lines on their own and are
// moved afterwards.
func TestChunkLineNumbers(t *testing.T) {
	var buf bytes.Buffer
	buf.WriteString(`{"type":"session","id":"s","version":3}` + "\n\n")
	for i := 0; buf.Len() < 3*parallelThreshold; i++ {
		switch {
		case i%997 == 0:
			buf.WriteString("not json\n")
		case i%1009 == 0:
			buf.WriteString("\n")
		default:
			fmt.Fprintf(&buf, `{"type":"message","id":"e%d","parentId":null,"message":{"role":"user","content":%q}}`+"\n", i, bytes.Repeat([]byte("x"), i%300))
		}
	}
	data := buf.Bytes()
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	one, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	runtime.GOMAXPROCS(4)
	if n := len(splitChunks(data, 0, false)); n != 4 {
		t.Fatalf("%d pieces, want 4", n)
	}
	split, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	lines := func(f *File) []int {
		var out []int
		for _, e := range f.Entries {
			out = append(out, e.Line)
		}
		return out
	}
	if !reflect.DeepEqual(lines(one), lines(split)) {
		t.Error("entry line numbers differ")
	}
	if !reflect.DeepEqual(one.Warnings, split.Warnings) || len(one.Warnings) == 0 {
		t.Errorf("warnings differ: %d and %d", len(one.Warnings), len(split.Warnings))
	}
	if !reflect.DeepEqual(one.Skipped, split.Skipped) {
		t.Error("skipped lines differ")
	}
}
