package summarize

import (
	"context"
	"errors"
	"testing"

	"github.com/pith-dev/pith/summarize/internal/httpfake"
)

// BenchmarkRemoteSummarize measures the client-side cost of one remote
// endpoint request over loopback (encoding, HTTP round trip, decoding): the
// part Pith adds on top of the endpoint's own latency. The SDK-based
// providers have theirs in summarize/llm.
func BenchmarkRemoteSummarize(b *testing.B) {
	srv := httpfake.NewServer(b, httpfake.Reply{Body: `{"summary": "## Goal\nShip it."}`}).URL()
	s, err := NewRemote(RemoteOptions{URL: srv})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	ctx := context.Background()
	for b.Loop() {
		if _, err := s.Summarize(ctx, testRequest); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkClassify(b *testing.B) {
	err := &APIError{Provider: "openai", StatusCode: 429}
	wrapped := errors.Join(errors.New("context"), err)
	for b.Loop() {
		Classify(wrapped)
	}
}
