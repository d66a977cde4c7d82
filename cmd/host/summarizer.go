package main

import (
	"github.com/pith-dev/pith/config"
	"github.com/pith-dev/pith/internal/wiring"
	"github.com/spf13/cobra"
)

// providerFlags choose the summarizer on the command line; each overrides
// the configuration file's summarizer block (wiring.Summarizer).
type providerFlags struct {
	provider string
	baseURL  string
	model    string
}

func (p *providerFlags) register(cmd *cobra.Command) {
	// The provider is checked as the flags are parsed: an unknown one is
	// the error, not what it would have needed (a model).
	choiceFlag(cmd, &p.provider, "provider", "summarizer provider", "summarizer: builtin, openai, anthropic or remote (default: the config's, else builtin)",
		config.ProviderBuiltin, config.ProviderOpenAI, config.ProviderAnthropic, config.ProviderRemote)
	fl := cmd.Flags()
	fl.StringVar(&p.baseURL, "base-url", "", "the provider's base URL (an OpenAI-compatible server such as http://127.0.0.1:11434/v1), or the remote endpoint's URL")
	fl.StringVar(&p.model, "model", "", "the summarizer model")
}

func (p providerFlags) choice() wiring.Provider {
	return wiring.Provider{Name: p.provider, BaseURL: p.baseURL, Model: p.model}
}
