package config

import (
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"
)

func TestDiff(t *testing.T) {
	plugin := func(name string, prio int) Plugin {
		p := defaultPlugin()
		p.Name, p.Path, p.Priority = name, "/bin/"+name, prio
		return p
	}
	tests := []struct {
		name   string
		mutate func(c *Config)
		want   []string
	}{
		{"nothing", func(c *Config) {}, nil},
		{"scalar", func(c *Config) { c.Compaction.KeepRecentTokens = 1 }, []string{"compaction.keepRecentTokens"}},
		{"nested", func(c *Config) { c.Compaction.RemoteEndpoint.Timeout = time.Second }, []string{"compaction.remoteEndpoint.timeout"}},
		{"list of strings", func(c *Config) { c.Pruning.ProtectedTools = []string{"read"} }, []string{"pruning.protectedTools"}},
		{"plugin field by name", func(c *Config) { c.Plugins[1].Timeout = time.Minute }, []string{"plugins[b].timeout"}},
		{"plugin env", func(c *Config) { c.Plugins[0].Env = map[string]string{"K": "v"} }, []string{"plugins[a].env.K"}},
		{"plugin order", func(c *Config) { c.Plugins[0], c.Plugins[1] = c.Plugins[1], c.Plugins[0] }, []string{"plugins"}},
		{"plugin inserted first", func(c *Config) { c.Plugins = append([]Plugin{plugin("z", 1)}, c.Plugins...) }, slices.Concat([]string{
			"plugins", "plugins[z].args", "plugins[z].events", "plugins[z].failure", "plugins[z].inheritEnv",
		}, limitKeys("z"), []string{
			"plugins[z].name", "plugins[z].path", "plugins[z].priority", "plugins[z].reattach", "plugins[z].sha256", "plugins[z].timeout",
		})},
		{"plugin removed", func(c *Config) { c.Plugins = c.Plugins[:1] }, slices.Concat([]string{
			"plugins", "plugins[b].args", "plugins[b].events", "plugins[b].failure", "plugins[b].inheritEnv",
		}, limitKeys("b"), []string{
			"plugins[b].name", "plugins[b].path", "plugins[b].priority", "plugins[b].reattach", "plugins[b].sha256", "plugins[b].timeout",
		})},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			old := Defaults()
			old.Plugins = []Plugin{plugin("a", 1), plugin("b", 2)}
			next := old.Clone()
			tc.mutate(next)
			if got := Diff(old, next); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Diff = %v, want %v", got, tc.want)
			}
		})
	}
}

// limitKeys are the diff keys of a plugin's limits block, sorted.
func limitKeys(name string) []string {
	var keys []string
	for _, f := range fieldsOf(reflect.TypeFor[PluginLimits]()) {
		keys = append(keys, "plugins["+name+"].limits."+f.key)
	}
	slices.Sort(keys)
	return keys
}

func TestChangeHas(t *testing.T) {
	ch := Change{Keys: []string{"compaction.remoteEndpoint.url", "plugins[audit].timeout", "retry"}}
	for key, want := range map[string]bool{
		"compaction":                true,
		"compaction.remoteEndpoint": true,
		"compaction.reserveTokens":  false,
		"compact":                   false,
		"plugins[audit]":            true,
		"plugins":                   true,
		"plugins[aud]":              false,
		"retry":                     true,
		"retry.maxRetries":          false,
	} {
		if got := ch.Has(key); got != want {
			t.Errorf("Has(%q) = %v, want %v", key, got, want)
		}
	}
}

func TestStoreSwapAndSubscribe(t *testing.T) {
	first := Defaults()
	s := NewStore(first)
	if s.Snapshot() != first || s.Version() != 1 {
		t.Fatal("a new store holds its initial configuration as version 1")
	}
	var (
		mu  sync.Mutex
		got []Change
	)
	cancel := s.Subscribe(func(ch Change) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, ch)
	})
	second := first.Clone()
	second.Retry.MaxRetries = 7
	ch := s.Swap(second)
	if s.Snapshot() != second || ch.Old != first || ch.New != second || ch.Version != 2 ||
		!reflect.DeepEqual(ch.Keys, []string{"retry.maxRetries"}) {
		t.Fatalf("unexpected change %+v", ch)
	}
	if first.Retry.MaxRetries != 3 {
		t.Fatal("the old snapshot was modified")
	}
	if _, ok := s.SwapIf(first, Defaults()); ok {
		t.Fatal("SwapIf must refuse when the expected configuration is not in force")
	}
	if _, ok := s.SwapIf(second, Defaults()); !ok {
		t.Fatal("SwapIf must swap when the expected configuration is in force")
	}
	cancel()
	s.Swap(Defaults())
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 || got[0].Version != 2 || got[1].Version != 3 {
		t.Fatalf("subscriber saw %d changes, want the 2 before cancel", len(got))
	}
	if NewStore(nil).Snapshot() == nil {
		t.Fatal("NewStore(nil) must hold the defaults")
	}
}

func TestStoreConcurrentReaders(t *testing.T) {
	s := NewStore(nil)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
					if c := s.Snapshot(); c.Retry.MaxRetries < 0 {
						t.Error("torn snapshot")
						return
					}
				}
			}
		}()
	}
	for i := range 200 {
		c := Defaults()
		c.Retry.MaxRetries = i
		s.Swap(c)
	}
	close(stop)
	wg.Wait()
	if s.Version() != 201 {
		t.Fatalf("version %d, want 201", s.Version())
	}
}

func TestDiffPlugins(t *testing.T) {
	plugin := func(name string) Plugin {
		p := defaultPlugin()
		p.Name, p.Path = name, "/bin/"+name
		return p
	}
	old := Defaults()
	old.Plugins = []Plugin{plugin("keep"), plugin("gone"), plugin("args"), plugin("env"), plugin("sum"), plugin("path"), plugin("prio"), plugin("fail")}
	next := old.Clone()
	next.Plugins = slicesWithout(next.Plugins, "gone")
	for i := range next.Plugins {
		p := &next.Plugins[i]
		switch p.Name {
		case "args":
			p.Args = []string{"-v"}
		case "env":
			p.Env = map[string]string{"A": "1"}
		case "sum":
			p.SHA256 = "ab"
		case "path":
			p.Path = "/opt/path"
		case "prio":
			p.Priority, p.Timeout = 1, time.Minute
		case "fail":
			p.Failure = FailureClosed
		}
	}
	next.Plugins = append(next.Plugins, plugin("new"))
	got := DiffPlugins(old, next)
	want := PluginDiff{
		Added:     []string{"new"},
		Removed:   []string{"gone"},
		Restart:   []string{"args", "env", "sum", "path"},
		Updated:   []string{"prio", "fail"},
		Unchanged: []string{"keep"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("DiffPlugins = %+v\nwant %+v", got, want)
	}
	if got.Empty() || !DiffPlugins(old, old).Empty() {
		t.Error("Empty is wrong")
	}
	if d := DiffPlugins(nil, old); len(d.Added) != len(old.Plugins) {
		t.Errorf("from nil: %+v", d)
	}
}

func slicesWithout(ps []Plugin, name string) []Plugin {
	var out []Plugin
	for _, p := range ps {
		if p.Name != name {
			out = append(out, p)
		}
	}
	return out
}

func TestSummarizerChain(t *testing.T) {
	s := Summarizer{Provider: ProviderOpenAI, Model: "a", APIKeyEnv: "K", Candidates: []Candidate{{Provider: ProviderAnthropic, Model: "b"}}}
	want := []Candidate{{Provider: ProviderOpenAI, Model: "a", APIKeyEnv: "K"}, {Provider: ProviderAnthropic, Model: "b"}}
	if got := s.Chain(); !reflect.DeepEqual(got, want) {
		t.Errorf("Chain = %+v, want %+v", got, want)
	}
}

func TestSummarizerContextWindow(t *testing.T) {
	c := Defaults()
	if got := c.SummarizerContextWindow(); got != DefaultContextWindow {
		t.Errorf("inherited window %d, want %d", got, DefaultContextWindow)
	}
	c.Summarizer.ContextWindow = 32000
	if got := c.SummarizerContextWindow(); got != 32000 {
		t.Errorf("own window %d, want 32000", got)
	}
}
