package llm

import (
	"context"
	"testing"

	"github.com/pith-dev/pith/core/summary"
	"github.com/pith-dev/pith/summarize/internal/httpfake"
)

// The benchmarks measure the client-side cost of one summary request over
// loopback (request encoding, HTTP round trip, response decoding): the part
// Pith adds on top of the model's own latency.

func benchmarkSummarizer(b *testing.B, s summary.Summarizer) {
	b.Helper()
	b.ReportAllocs()
	ctx := context.Background()
	for b.Loop() {
		if _, err := s.Summarize(ctx, testRequest); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkOpenAISummarize(b *testing.B) {
	b.Setenv("PITH_TEST_OPENAI_KEY", testKey)
	srv := httpfake.NewServer(b, httpfake.Reply{File: "openai_chat_completion.json"}).URL()
	s, err := NewOpenAI(OpenAIOptions{Model: "gpt-4o", BaseURL: srv + "/v1", APIKeyEnv: "PITH_TEST_OPENAI_KEY"})
	if err != nil {
		b.Fatal(err)
	}
	benchmarkSummarizer(b, s)
}

func BenchmarkAnthropicSummarize(b *testing.B) {
	b.Setenv("PITH_TEST_ANTHROPIC_KEY", testKey)
	srv := httpfake.NewServer(b, httpfake.Reply{File: "anthropic_message.json"}).URL()
	s, err := NewAnthropic(AnthropicOptions{Model: "claude-sonnet-4-5", BaseURL: srv, APIKeyEnv: "PITH_TEST_ANTHROPIC_KEY"})
	if err != nil {
		b.Fatal(err)
	}
	benchmarkSummarizer(b, s)
}
