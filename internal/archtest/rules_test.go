package archtest

import (
	"slices"
	"strings"
	"testing"
)

// graphOf builds a Graph from "pkg: imp imp" lines; "pkg [test]: imp" adds
// test imports.
func graphOf(lines ...string) Graph {
	g := Graph{}
	for _, l := range lines {
		name, imps, _ := strings.Cut(l, ":")
		name = strings.TrimSpace(name)
		test := false
		if n, ok := strings.CutSuffix(name, " [test]"); ok {
			name, test = n, true
		}
		p := g[name]
		if p == nil {
			p = &Package{ImportPath: name}
			g[name] = p
		}
		if test {
			p.XTestImports = append(p.XTestImports, strings.Fields(imps)...)
		} else {
			p.Imports = append(p.Imports, strings.Fields(imps)...)
		}
	}
	return g
}

func TestMatch(t *testing.T) {
	tests := []struct {
		pattern, path string
		want          bool
	}{
		{"m/sdk", "m/sdk", true},
		{"m/sdk", "m/sdk/sdktest", false},
		{"m/sdk/...", "m/sdk", true},
		{"m/sdk/...", "m/sdk/sdktest", true},
		{"m/sdk/...", "m/sdkx", false},
		{"github.com/openai/openai-go/...", "github.com/openai/openai-go/v3/option", true},
	}
	for _, tt := range tests {
		if got := Match(tt.pattern, tt.path); got != tt.want {
			t.Errorf("Match(%q, %q) = %v, want %v", tt.pattern, tt.path, got, tt.want)
		}
	}
}

func TestDepRule(t *testing.T) {
	g := graphOf(
		"m/core/branch: m/core/summarize fmt",
		"m/core/summarize: net/http",
		"m/core/summarize/llm: m/core/summarize sdk/openai/v3",
		"m/core/engine: m/core/summarize/llm",
		"m/sdk: m/hooks",
		"m/hooks: m/core/session",
		"m/core/session: fmt",
		"m/core/compaction [test]: m/core/summarize/llm",
	)
	tests := []struct {
		name        string
		rule        DepRule
		wantViol    []string
		wantChecked []string
	}{
		{
			name: "clean",
			rule: DepRule{From: []string{"m/core/branch", "m/sdk/...", "m/core/compaction"}, Forbid: []string{"sdk/openai/..."}},
			// compaction's tests may use llm: only what a binary links counts.
			wantChecked: []string{"m/core/branch", "m/core/compaction", "m/sdk"},
		},
		{
			name:        "indirect dependency names its chain",
			rule:        DepRule{From: []string{"m/core/engine"}, Forbid: []string{"sdk/openai/..."}},
			wantViol:    []string{"m/core/engine depends on sdk/openai/v3: m/core/engine → m/core/summarize/llm → sdk/openai/v3"},
			wantChecked: []string{"m/core/engine"},
		},
		{
			name: "an excepted package is not checked",
			rule: DepRule{From: []string{"m/core/..."}, Except: []string{"m/core/summarize/...", "m/core/engine"}, Forbid: []string{"net/http"}},
			// Except spares the roots, not what depends on them.
			wantViol:    []string{"m/core/branch depends on net/http: m/core/branch → m/core/summarize → net/http"},
			wantChecked: []string{"m/core/branch", "m/core/compaction", "m/core/session"},
		},
		{
			name:        "a package not written yet is skipped",
			rule:        DepRule{From: []string{"m/plugins/examples/..."}, Forbid: []string{"sdk/openai/..."}},
			wantChecked: nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			viol, checked := tt.rule.Check(g)
			if !slices.Equal(viol, tt.wantViol) || !slices.Equal(checked, tt.wantChecked) {
				t.Errorf("Check = %q, %q; want %q, %q", viol, checked, tt.wantViol, tt.wantChecked)
			}
		})
	}
}

func TestLinkers(t *testing.T) {
	g := graphOf(
		"m/plugins/a: m/sdk",
		"m/internal/testplugins/b: m/internal/helper",
		"m/internal/helper: m/sdk",
		"m/sdk: m/hooks",
		"m/tools/c: fmt",
		"m/lib: m/sdk",
	)
	for _, p := range []string{"m/plugins/a", "m/internal/testplugins/b", "m/tools/c"} {
		g[p].Name = "main"
	}
	got := g.Linkers("m/sdk", "m/...")
	want := []string{"m/internal/testplugins/b", "m/plugins/a"}
	if !slices.Equal(got, want) {
		t.Errorf("Linkers = %q, want %q", got, want)
	}
}

func TestImportRule(t *testing.T) {
	g := graphOf(
		"m/proto/v1: google/protobuf",
		"m/proto/v1/v1grpc: m/proto/v1",
		"m/hooks/wire: m/proto/v1",
		"m/sdk/sdktest: m/proto/v1",
		"m/hooks: fmt",
		"m/hooks [test]: m/proto/v1",
		"m/core/engine: m/proto/v1/v1grpc",
	)
	r := ImportRule{Target: []string{"m/proto/v1/..."}, AllowedBy: []string{"m/hooks/wire/...", "m/sdk/..."}}
	got := r.Check(g, "m/...")
	want := []string{"m/core/engine imports m/proto/v1/v1grpc", "m/hooks imports m/proto/v1"}
	if !slices.Equal(got, want) {
		t.Errorf("Check = %q, want %q", got, want)
	}
}

func TestNoImportOfTree(t *testing.T) {
	g := graphOf(
		"m/cmd/host: m/cmd/host/internal/ui m/core/engine",
		"m/cmd/host/internal/ui: fmt",
		"m/cmd/other: m/cmd/host/internal/ui",
		"m/core/engine: fmt",
		"m/core/engine [test]: m/cmd/host",
		"m/cmdline: fmt",
	)
	got := NoImportOfTree(g, "m/cmd/...", "m/...")
	want := []string{"m/cmd/other imports m/cmd/host/internal/ui", "m/core/engine imports m/cmd/host"}
	if !slices.Equal(got, want) {
		t.Errorf("NoImportOfTree = %q, want %q", got, want)
	}
}

func TestClosureRuleSeesTestImports(t *testing.T) {
	g := graphOf(
		"m/core/summarize/llm: sdk/openai/v3",
		"m/core/branch: fmt",
		"m/core/compaction: fmt",
		"m/core/compaction [test]: m/internal/helper",
		"m/internal/helper: m/core/summarize/llm",
		"m/core/engine: m/core/summarize/llm",
		"m/core/tokens [test]: sdk/openai/v3",
	)
	r := TestClosureRule{From: []string{"m/core/..."}, Except: []string{"m/core/summarize/llm"}, Forbid: []string{"sdk/openai/..."}}
	violations, checked := r.Check(g)
	want := []string{
		"tests of m/core/compaction link sdk/openai/v3: m/core/compaction (test) → m/internal/helper → m/core/summarize/llm → sdk/openai/v3",
		"tests of m/core/engine link sdk/openai/v3: m/core/engine → m/core/summarize/llm → sdk/openai/v3",
		"tests of m/core/tokens link sdk/openai/v3: m/core/tokens (test) → sdk/openai/v3",
	}
	if !slices.Equal(violations, want) {
		t.Errorf("violations:\n%s\nwant:\n%s", strings.Join(violations, "\n"), strings.Join(want, "\n"))
	}
	if !slices.Equal(checked, []string{"m/core/branch", "m/core/compaction", "m/core/engine", "m/core/tokens"}) {
		t.Errorf("checked %v", checked)
	}
}
