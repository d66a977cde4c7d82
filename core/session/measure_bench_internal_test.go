package session

import (
	"bytes"
	"testing"

	"github.com/pith-dev/pith/internal/sessiongen"
)

// BenchmarkStringUnits measures the strings of a generated session's
// messages (texts, thinking, tool outputs and arguments in many scripts)
// with stringUnits alone: the loop that reading a session for a dry run
// spends most of its time in.
func BenchmarkStringUnits(b *testing.B) {
	var buf bytes.Buffer
	if err := sessiongen.Generate(&buf, sessiongen.Benchmark(1, 5_000)); err != nil {
		b.Fatal(err)
	}
	var lines [][]byte
	var strs []int // where each string value of a "text" member starts, line by line
	var size int64
	for _, l := range bytes.Split(buf.Bytes(), []byte("\n")) {
		for at := 0; ; {
			k := bytes.Index(l[at:], []byte(`"text":"`))
			if k < 0 {
				break
			}
			at += k + len(`"text":`)
			p := scanner{s: l, i: at}
			p.str()
			lines = append(lines, l)
			strs = append(strs, at)
			size += int64(p.i - at)
		}
	}
	b.SetBytes(size)
	b.ResetTimer()
	for b.Loop() {
		for j, l := range lines {
			p := scanner{s: l, i: strs[j]}
			p.stringUnits()
		}
	}
}
