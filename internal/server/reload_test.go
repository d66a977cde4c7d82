package server

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/pith-dev/pith/config"
	"github.com/pith-dev/pith/core/summary"
	"github.com/pith-dev/pith/hooks"
	"github.com/pith-dev/pith/internal/pluginhost"
	"github.com/pith-dev/pith/summarize/builtin"
)

// TestPrepareReloadVeto: what cannot be prepared rejects the new
// configuration and leaves the running set as it was.
func TestPrepareReloadVeto(t *testing.T) {
	errSummarizer := errors.New("no such model")
	specs := func(c *config.Config) []pluginhost.Spec {
		out := make([]pluginhost.Spec, len(c.Plugins))
		for i, p := range c.Plugins {
			out[i] = pluginhost.Spec{Name: p.Name, Path: p.Path, Order: i, Priority: p.Priority, Timeout: p.Timeout, Failure: hooks.Failure(p.Failure)}
		}
		return out
	}
	old := testConfig(t.TempDir())
	srv, err := New(context.Background(), Options{
		Config: old,
		Logger: hclog.NewNullLogger(),
		Summarizer: func(c *config.Config) (summary.Summarizer, error) {
			if c.Summarizer.Model == "broken" {
				return nil, errSummarizer
			}
			return builtin.New(builtin.Options{}), nil
		},
		Settings:    testSettings,
		PluginSpecs: specs,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close(context.Background())

	missing := old.Clone()
	missing.Plugins = []config.Plugin{{Name: "ghost", Path: filepath.Join(t.TempDir(), "no-such-plugin"), Priority: 1, Timeout: config.DefaultPluginTimeout, Failure: "open"}}
	broken := old.Clone()
	broken.Summarizer.Model = "broken"
	tests := []struct {
		name string
		next *config.Config
		want error
	}{
		{"plugin that does not start", missing, nil},
		{"summarizer that cannot be built", broken, errSummarizer},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := srv.PrepareReload(context.Background(), old, tt.next)
			if err == nil {
				t.Fatal("the reload was not rejected")
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
			srv.mu.Lock()
			n := len(srv.pluginSet)
			srv.mu.Unlock()
			if n != 0 || srv.plugins.Supervisor("ghost") != nil {
				t.Fatalf("the rejected plugin set is in force (%d plugins)", n)
			}
		})
	}
}
