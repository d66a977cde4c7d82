package session_test

import (
	"bytes"
	"os"
	"testing"

	"github.com/pith-dev/pith/core/session"
)

// BenchmarkScanLines is the line scanner alone: every line of the
// 100 000-entry session, validated (ValidJSON) and read as an entry
// (ParseEntry), with no tree or file around them.
func BenchmarkScanLines(b *testing.B) {
	path, size := benchSession(b)
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSpace(data), []byte("\n"))[1:]
	b.Run("ValidJSON", func(b *testing.B) {
		b.SetBytes(size)
		defer reportCPU(b, cpuTime())
		for b.Loop() {
			for _, l := range lines {
				if err := session.ValidJSON(l); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("ParseEntry", func(b *testing.B) {
		b.SetBytes(size)
		defer reportCPU(b, cpuTime())
		for b.Loop() {
			for _, l := range lines {
				if _, err := session.ParseEntry(l); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
