package tokens_test

import (
	"bytes"
	"sync"
	"testing"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/core/tokens"
	"github.com/pith-dev/pith/internal/sessiongen"
)

var (
	benchOnce sync.Once
	benchMsgs [][]byte
	benchSize int64
	benchErr  error
)

// benchMessages are the messages of a generated 20 000-entry session (tool
// calls with arguments, tool results, unicode), generated once per run.
func benchMessages(b *testing.B) ([][]byte, int64) {
	benchOnce.Do(func() {
		var buf bytes.Buffer
		if benchErr = sessiongen.Generate(&buf, sessiongen.Benchmark(1, 20_000)); benchErr != nil {
			return
		}
		f, err := session.Parse(buf.Bytes())
		if err != nil {
			benchErr = err
			return
		}
		for _, e := range f.Entries {
			if m, ok := session.EntryMessage(e); ok {
				benchMsgs = append(benchMsgs, m.Raw)
				benchSize += int64(len(m.Raw))
			}
		}
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return benchMsgs, benchSize
}

// BenchmarkEstimate estimates every message of a generated session, the
// work of a context-token count from scratch.
func BenchmarkEstimate(b *testing.B) {
	msgs, size := benchMessages(b)
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		n := 0
		for _, m := range msgs {
			n += tokens.Estimate(m)
		}
		if n == 0 {
			b.Fatal("no tokens")
		}
	}
}

// BenchmarkStringifiedLen measures the JSON.stringify length of tool-call
// arguments, the estimator's only walk over arbitrary JSON.
func BenchmarkStringifiedLen(b *testing.B) {
	msgs, _ := benchMessages(b)
	var args [][]byte
	var size int64
	for _, m := range msgs {
		session.ArrayElements(field(m, "content"), func(v []byte) bool {
			if a := field(v, "arguments"); a != nil {
				args = append(args, a)
				size += int64(len(a))
			}
			return true
		})
	}
	if len(args) == 0 {
		b.Skip("no tool-call arguments in the generated session")
	}
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		for _, a := range args {
			tokens.StringifiedLen(a)
		}
	}
}

// field is the raw value of an object's member, or nil.
func field(obj []byte, name string) (raw []byte) {
	session.ObjectFields(obj, func(k string, v []byte) bool {
		if k == name {
			raw = v
		}
		return true
	})
	return raw
}
