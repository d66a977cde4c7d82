package wiring

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/pith-dev/pith/config"
	"github.com/pith-dev/pith/core/summary"
	"github.com/pith-dev/pith/summarize"
	"github.com/pith-dev/pith/summarize/builtin"
	"github.com/pith-dev/pith/summarize/llm"
)

// Provider is a command line's choice of summarizer (--provider,
// --base-url, --model); each set field overrides the configuration's
// summarizer block. The zero value takes the configuration as it is.
type Provider struct {
	Name    string
	BaseURL string
	Model   string
}

// Summarizer makes the summarizer an operation uses, and its name for
// the user: the configured (or chosen) provider, then the configured
// candidates, inside a Chain that retries transient errors with backoff
// (docs/behaviour.md §9.5). The built-in summarizer needs none of this.
// Credentials come only from environment variables named in the
// configuration (OPENAI_API_KEY / ANTHROPIC_API_KEY by default).
//
// Every request then passes summarize.Windowed: one whose estimated input
// plus output cap exceeds the summarizer's window is never sent.
func Summarizer(cfg *config.Config, p Provider, log hclog.Logger) (summary.Summarizer, string, error) {
	s, name, err := provider(cfg, p, log)
	if err != nil {
		return nil, "", err
	}
	return summarize.Windowed{Summarizer: s, Window: cfg.SummarizerContextWindow(), DefaultMaxTokens: llm.DefaultMaxTokens}, name, nil
}

func provider(cfg *config.Config, p Provider, log hclog.Logger) (summary.Summarizer, string, error) {
	s := cfg.Summarizer
	provider := s.Provider
	if p.Name != "" {
		provider = p.Name
		if p.Name != s.Provider {
			// Settings of another provider do not carry over.
			s = config.Summarizer{Provider: p.Name}
		}
	} else if cfg.Compaction.RemoteEndpoint.URL != "" && (provider == "" || provider == config.ProviderBuiltin) {
		provider = config.ProviderRemote // docs/behaviour.md §7: a configured endpoint is used
	}
	if p.Model != "" {
		s.Model = p.Model
	}
	if p.BaseURL != "" {
		s.BaseURL = p.BaseURL
	}
	local := builtin.New(builtin.Options{})
	switch provider {
	case "", config.ProviderBuiltin:
		return local, "builtin", nil
	case config.ProviderRemote:
		ep := cfg.Compaction.RemoteEndpoint
		if p.BaseURL != "" {
			ep.URL = p.BaseURL
		}
		if ep.URL == "" {
			return nil, "", fmt.Errorf("--provider remote needs --base-url or compaction.remoteEndpoint.url")
		}
		r, err := summarize.NewRemote(summarize.RemoteOptions{
			URL: ep.URL, Timeout: ep.Timeout, AuthEnv: ep.AuthEnv, AuthHeader: ep.AuthHeader,
			MaxRetries: ep.Retries, BaseDelay: time.Duration(cfg.Retry.BaseDelayMs) * time.Millisecond,
			MaxBackoff: cfg.Retry.MaxBackoff, Fallback: local, Logger: log,
		})
		if err != nil {
			return nil, "", err
		}
		return r, "remote " + ep.URL, nil
	}
	cands := []config.Candidate{{Provider: provider, Model: s.Model, BaseURL: s.BaseURL, APIKeyEnv: s.APIKeyEnv}}
	cands = append(cands, s.Candidates...)
	chain := &summarize.Chain{
		BaseDelay:  time.Duration(cfg.Retry.BaseDelayMs) * time.Millisecond,
		MaxBackoff: cfg.Retry.MaxBackoff,
		Logger:     log,
	}
	if cfg.Retry.Enabled {
		chain.MaxRetries = cfg.Retry.MaxRetries
	}
	for _, c := range cands {
		sum, err := providerSummarizer(c, s.MaxOutputTokens)
		if err != nil {
			return nil, "", err
		}
		chain.Candidates = append(chain.Candidates, summarize.Candidate{Name: c.Provider + "/" + c.Model, Summarizer: sum})
	}
	// The built-in summarizer is the last fallback: when every model
	// failed, a deterministic summary still beats no compaction.
	chain.Candidates = append(chain.Candidates, summarize.Candidate{Name: "builtin (fallback)", Summarizer: local})
	name := cands[0].Provider + "/" + cands[0].Model
	if m := cfg.Compaction.Model; m != "" && m != cands[0].Model {
		// The explore strategy's worker runs on its own model, with the
		// summarizer's provider, endpoint, credential and retry rules.
		c := cands[0]
		c.Model = m
		sum, err := providerSummarizer(c, s.MaxOutputTokens)
		if err != nil {
			return nil, "", err
		}
		explorer := *chain
		explorer.Candidates = []summarize.Candidate{{Name: c.Provider + "/" + m, Summarizer: sum}}
		return withExplorer{Summarizer: chain, explorer: &explorer}, name, nil
	}
	return chain, name, nil
}

// withExplorer is a summarizer whose tool conversations (the explore
// strategy's worker) go to another model: compaction.model.
type withExplorer struct {
	summary.Summarizer
	explorer summary.ToolCaller
}

func (w withExplorer) Converse(ctx context.Context, req summary.ConverseRequest) (summary.ConverseResult, error) {
	return w.explorer.Converse(ctx, req)
}

func providerSummarizer(c config.Candidate, maxOutput int) (summary.Summarizer, error) {
	if c.Model == "" {
		return nil, fmt.Errorf("the %s summarizer needs a model (--model or summarizer.model)", c.Provider)
	}
	switch c.Provider {
	case config.ProviderOpenAI:
		return llm.NewOpenAI(llm.OpenAIOptions{Model: c.Model, BaseURL: c.BaseURL, APIKeyEnv: c.APIKeyEnv, MaxOutputTokens: maxOutput})
	case config.ProviderAnthropic:
		return llm.NewAnthropic(llm.AnthropicOptions{Model: c.Model, BaseURL: c.BaseURL, APIKeyEnv: c.APIKeyEnv, MaxOutputTokens: maxOutput})
	}
	return nil, fmt.Errorf("unknown summarizer provider %q (builtin, openai, anthropic or remote)", c.Provider)
}
