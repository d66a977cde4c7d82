package main

import (
	"bytes"
	"encoding/json"
	"os"
	"sync"
	"testing"

	"github.com/pith-dev/pith/internal/sessiongen"
	"github.com/pith-dev/pith/sdk"
)

// sessionMessages returns the "message" of every message entry of a JSONL
// session: what a preparation's messages are made of.
func sessionMessages(data []byte) []json.RawMessage {
	var msgs []json.RawMessage
	for line := range bytes.SplitSeq(data, []byte("\n")) {
		var e struct {
			Type    string          `json:"type"`
			Message json.RawMessage `json:"message"`
		}
		if json.Unmarshal(line, &e) == nil && e.Type == "message" && len(e.Message) > 0 {
			msgs = append(msgs, e.Message)
		}
	}
	return msgs
}

func demoMessages(tb testing.TB) []json.RawMessage {
	data, err := os.ReadFile("../../../examples/demo-session.jsonl")
	if err != nil {
		tb.Skip(err)
	}
	return sessionMessages(data)
}

// generatedMessages are the messages of a generated 2 000-entry session
// (about 5 MB), made once per test binary: tool results of realistic
// sizes, a share of lines written with \u escapes, odd tool arguments.
var generatedMessages = sync.OnceValues(func() ([]json.RawMessage, error) {
	var buf bytes.Buffer
	if err := sessiongen.Generate(&buf, sessiongen.Defaults(14, 2000)); err != nil {
		return nil, err
	}
	return sessionMessages(buf.Bytes()), nil
})

// BenchmarkRequest is the handler's work before the model call: redact
// every message of a conversation and build the prompt from them.
func BenchmarkRequest(b *testing.B) {
	gen, err := generatedMessages()
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		msgs []json.RawMessage
	}{{"demo", demoMessages(b)}, {"generated", gen}} {
		b.Run(c.name, func(b *testing.B) {
			s := &summarizer{maxInputChars: 1 << 30}
			p := sdk.Preparation{MessagesToSummarize: c.msgs}
			n := 0
			for _, m := range c.msgs {
				n += len(m)
			}
			b.SetBytes(int64(n))
			b.ReportAllocs()
			for b.Loop() {
				if _, _, _, err := s.request(p, ""); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
