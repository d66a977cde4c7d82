package transcript

import (
	"bytes"
	"sync"
	"testing"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/internal/sessiongen"
)

// benchMessages are the messages of a 20 000-entry generated session's
// path, made once per test binary: about what one compaction of a long
// session serializes.
var benchMessages = struct {
	once sync.Once
	msgs []session.Message
	err  error
}{}

func messages(b *testing.B) []session.Message {
	b.Helper()
	benchMessages.once.Do(func() {
		var buf bytes.Buffer
		o := sessiongen.Benchmark(3, 20_000)
		o.Compaction = 0
		if err := sessiongen.Generate(&buf, o); err != nil {
			benchMessages.err = err
			return
		}
		f, err := session.Parse(buf.Bytes())
		if err != nil {
			benchMessages.err = err
			return
		}
		tree := session.NewTree(f.Entries)
		for _, e := range tree.Path(tree.Last()) {
			if m, ok := session.EntryMessage(e); ok {
				benchMessages.msgs = append(benchMessages.msgs, m)
			}
		}
	})
	if benchMessages.err != nil {
		b.Fatal(benchMessages.err)
	}
	return benchMessages.msgs
}

func BenchmarkSerializeConversation(b *testing.B) {
	msgs := messages(b)
	b.Logf("%d messages", len(msgs))
	b.ReportAllocs()
	for b.Loop() {
		SerializeConversation(msgs)
	}
}

// BenchmarkFitConversation leaves out the middle to fit a 100k-token
// window, the usual case for a long session.
func BenchmarkFitConversation(b *testing.B) {
	msgs := messages(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := FitConversation(msgs, 100_000); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkConvertForLLM(b *testing.B) {
	msgs := messages(b)
	b.ReportAllocs()
	for b.Loop() {
		ConvertForLLM(msgs)
	}
}

func BenchmarkFileOps(b *testing.B) {
	msgs := messages(b)
	b.ReportAllocs()
	for b.Loop() {
		ops := NewFileOps()
		for _, m := range msgs {
			ops.AddMessage(m)
		}
		ops.Lists()
	}
}
