package wiring

import (
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/pith-dev/pith/config"
	"github.com/pith-dev/pith/core/summary"
	"github.com/pith-dev/pith/summarize"
)

// TestSummarizerChoice: what the configuration and the command line's
// choice make, by the name the user is shown, and the refusals.
func TestSummarizerChoice(t *testing.T) {
	withRemote := config.Defaults()
	withRemote.Compaction.RemoteEndpoint.URL = "http://127.0.0.1:9/summarize"
	openai := config.Defaults()
	openai.Summarizer = config.Summarizer{Provider: config.ProviderOpenAI, Model: "gpt-x", BaseURL: "http://127.0.0.1:9/v1"}
	for _, tc := range []struct {
		name    string
		cfg     *config.Config
		choice  Provider
		want    string
		wantErr string
	}{
		{name: "defaults", cfg: config.Defaults(), want: "builtin"},
		{name: "a configured endpoint is used", cfg: withRemote, want: "remote http://127.0.0.1:9/summarize"},
		{name: "--provider builtin over an endpoint", cfg: withRemote, choice: Provider{Name: "builtin"}, want: "builtin"},
		{name: "remote without a URL", cfg: config.Defaults(), choice: Provider{Name: "remote"}, wantErr: "--provider remote needs --base-url"},
		{name: "configured provider", cfg: openai, want: "openai/gpt-x"},
		{name: "--model over the configured one", cfg: openai, choice: Provider{Model: "gpt-y"}, want: "openai/gpt-y"},
		// Settings of another provider do not carry over: no model.
		{name: "--provider anthropic drops openai's model", cfg: openai, choice: Provider{Name: "anthropic"}, wantErr: "the anthropic summarizer needs a model"},
		{name: "unknown provider", cfg: config.Defaults(), choice: Provider{Name: "bogus", Model: "m"}, wantErr: `unknown summarizer provider "bogus"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, name, err := Summarizer(tc.cfg, tc.choice, hclog.NewNullLogger())
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if name != tc.want {
				t.Errorf("name %q, want %q", name, tc.want)
			}
			// Every summarizer is held to its window.
			if _, ok := s.(summarize.Windowed); !ok {
				t.Errorf("%T is not summarize.Windowed", s)
			}
		})
	}
}

// TestSummarizerExplorerModel: compaction.model gives the explore
// worker's tool conversations a model of their own; without it the
// summarizer's chain converses itself.
func TestSummarizerExplorerModel(t *testing.T) {
	cfg := config.Defaults()
	cfg.Summarizer = config.Summarizer{Provider: config.ProviderOpenAI, Model: "gpt-x", BaseURL: "http://127.0.0.1:9/v1"}
	s, _, err := provider(cfg, Provider{}, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.(*summarize.Chain); !ok {
		t.Fatalf("without compaction.model: %T, want the chain", s)
	}
	cfg.Compaction.Model = "gpt-worker"
	s, name, err := provider(cfg, Provider{}, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	w, ok := s.(withExplorer)
	if !ok {
		t.Fatalf("with compaction.model: %T, want withExplorer", s)
	}
	if name != "openai/gpt-x" {
		t.Errorf("name %q: the summaries are still the summarizer's", name)
	}
	chain := w.explorer.(*summarize.Chain)
	if len(chain.Candidates) != 1 || chain.Candidates[0].Name != "openai/gpt-worker" {
		t.Errorf("explorer candidates %+v", chain.Candidates)
	}
	var _ summary.ToolCaller = w
}
