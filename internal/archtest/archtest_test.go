package archtest

import (
	"context"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/pith-dev/pith"

// in returns the patterns, relative to the module, as import paths.
func in(rel ...string) []string {
	out := make([]string, len(rel))
	for i, r := range rel {
		out[i] = module + "/" + r
	}
	return out
}

var (
	llmSDKs = []string{
		"github.com/openai/openai-go/...",
		"github.com/anthropics/anthropic-sdk-go/...",
	}
	pluginRuntime = []string{
		"github.com/hashicorp/go-plugin/...",
		"google.golang.org/grpc/...",
	}
	pureCore = in("core/session", "core/tokens", "core/compaction", "core/branch")
)

// depRules are ARCHITECTURE.md's "Dependency direction": a plugin binary
// that imports sdk must not link an LLM client, and the pure core links
// neither an LLM client nor the plugin runtime.
var depRules = []DepRule{
	{
		Name: "light packages and plugin binaries link no LLM SDK",
		From: append(in("core/summarize", "hooks/...", "sdk/...", "plugins/...",
			"internal/testplugins/..."), pureCore...),
		Forbid: llmSDKs,
	},
	{
		Name:   "the pure core links no plugin runtime",
		From:   pureCore,
		Forbid: pluginRuntime,
	},
}

// networkRule: the pure core links no network code. core/compaction and
// core/branch still do, through core/summarize (the summarizer interface
// and its request types live beside the HTTP clients); moving them to a
// leaf package is a package move this round does not make. Those two are
// listed as known: logged, not failed — and the test fails once one of
// them no longer needs the exception, so the list only shrinks.
var networkRule = DepRule{
	Name:   "the pure core links no net/http",
	From:   pureCore,
	Forbid: []string{"net/http", "crypto/tls"},
}

var networkKnown = in("core/compaction", "core/branch")

// wireRule: the wire types and the host/plugin glue stay with the adapters.
var wireRule = ImportRule{
	Name:   "hooks/wire is imported only by the adapters",
	Target: in("hooks/wire/..."),
	// plugins/node: its test checks the Node plugin's handshake against
	// the host's own constants.
	AllowedBy: in("hooks/pluginhost/...", "sdk/...", "plugins/node"),
}

// testDepRule: only the provider package, its direct users and the CLI
// test against an LLM SDK; every other test binary leaves the SDKs'
// generated packages (the longest compiles of a cold build) out.
var testDepRule = TestClosureRule{
	Name: "tests that do not need an LLM SDK link none",
	From: in("core/...", "hooks/...", "sdk/...", "plugins/...", "server/...", "client/...", "config/...", "internal/..."),
	// core/engine and core/explore test the exploring worker end to end
	// through the official SDKs' tool calling against loopback servers.
	Except: in("core/summarize/llm/...", "internal/archtest", "core/engine", "core/explore"),
	Forbid: llmSDKs,
}

// protoRule: generated protobuf types never leak past the adapter packages.
// internal/testplugins/automtls is a plugin built with plain go-plugin, on
// purpose without the SDK, as plugins made before it are.
var protoRule = ImportRule{
	Name:      "the hooks protobuf package is imported only by its adapters",
	Target:    in("proto/pith/hooks/v1/..."),
	AllowedBy: in("hooks/wire/...", "hooks/pluginhost/...", "sdk/...", "internal/testplugins/automtls"),
}

// TestArchitecture loads the module's import graph with one go list run
// and checks every rule against it.
func TestArchitecture(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to read the import graph: %v", err)
	}
	g, err := Load(context.Background(), goBin, "", module+"/...")
	if err != nil {
		t.Fatal(err)
	}
	own := module + "/..."
	for _, path := range g.Select(own) {
		if p := g[path]; p.Error != nil {
			// Another test reports the breakage; the rules still run on
			// what go list could read.
			t.Logf("note: %s did not load fully: %s", path, firstLine(p.Error.Err))
		}
	}
	for _, r := range depRules {
		t.Run(r.Name, func(t *testing.T) {
			violations, checked := r.Check(g)
			for _, v := range violations {
				t.Error(short(v))
			}
			t.Logf("checked %d packages: %s", len(checked), trimModule(checked))
		})
	}
	t.Run(networkRule.Name, func(t *testing.T) {
		violations, checked := networkRule.Check(g)
		stillKnown := map[string]bool{}
		for _, v := range violations {
			root, _, _ := strings.Cut(v, " ")
			if slices.Contains(networkKnown, root) {
				stillKnown[root] = true
				t.Logf("known, pending the summarizer interface's move to a leaf package: %s", short(v))
				continue
			}
			t.Error(short(v))
		}
		for _, k := range networkKnown {
			if !stillKnown[k] {
				t.Errorf("%s links no network code any more: remove it from networkKnown", short(k))
			}
		}
		t.Logf("checked %d packages: %s", len(checked), trimModule(checked))
	})
	t.Run(wireRule.Name, func(t *testing.T) {
		for _, v := range wireRule.Check(g, own) {
			t.Error(short(v))
		}
	})
	t.Run(testDepRule.Name, func(t *testing.T) {
		violations, checked := testDepRule.Check(g)
		for _, v := range violations {
			t.Error(short(v))
		}
		t.Logf("checked %d packages", len(checked))
	})
	t.Run("nothing imports cmd", func(t *testing.T) {
		for _, v := range NoImportOfTree(g, module+"/cmd/...", own) {
			t.Error(short(v))
		}
	})
	t.Run(protoRule.Name, func(t *testing.T) {
		for _, v := range protoRule.Check(g, own) {
			t.Error(short(v))
		}
	})
}

func trimModule(paths []string) string { return short(strings.Join(paths, " ")) }

// short drops the module prefix from the import paths in s, for reading.
func short(s string) string { return strings.ReplaceAll(s, module+"/", "") }

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
