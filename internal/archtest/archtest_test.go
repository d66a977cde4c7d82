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
	// llmSDKs: Pith links no provider SDK (summarize/llm speaks the two
	// wire formats itself; the SDKs were over two thirds of a cold build's
	// CPU and most of its peak memory). The rules naming them stay so that
	// none comes back into the core, a plugin or a light package unnoticed.
	llmSDKs = []string{
		"github.com/openai/openai-go/...",
		"github.com/anthropics/anthropic-sdk-go/...",
	}
	pluginRuntime = []string{
		"github.com/hashicorp/go-plugin/...",
		"google.golang.org/grpc/...",
	}
	network  = []string{"net/http", "crypto/tls"}
	database = []string{"github.com/jackc/pgx/...", "database/sql"}
	// adapters are the module's packages that speak to the outside world
	// or put the program together: providers, stores, the plugin host,
	// the daemon, the client, the composition root.
	adapters = in("summarize/...", "store/...", "internal/pluginhost/...", "internal/server/...",
		"internal/wiring/...", "client/...", "viewer/...", "cmd/...")
)

// coreRules: core/... is the layer the rest is built on, and links only
// the standard library's computing packages and the plugin contract. It
// is given what reaches the outside (a summarizer through core/summary's
// interfaces, a session backend, the hooks), never builds it. No core
// package is an exception: one that needs the network needs an
// interface in core/summary and an adapter outside core.
var coreRules = []DepRule{
	{
		Name:   "the core links no network, TLS, provider SDK, plugin runtime or database",
		From:   in("core/..."),
		Forbid: slices.Concat(network, llmSDKs, pluginRuntime, database),
	},
	{
		Name:   "the core imports no adapter",
		From:   in("core/..."),
		Forbid: adapters,
	},
}

// depRules (docs/architecture.md, "The layers"): a plugin binary that imports sdk, the contract and the
// offline summarizer link no LLM client.
var depRules = []DepRule{
	{
		Name: "light packages and plugin binaries link no LLM SDK",
		From: in("summarize", "summarize/builtin", "hooks/...", "sdk/...", "plugins/...",
			"internal/testplugins/..."),
		Forbid: llmSDKs,
	},
}

// examplePlugins are what a plugin author copies: they show that sdk is
// enough, so they import the sdk and the standard library only (tests
// aside), never the host's packages.
var examplePlugins = in("plugins/examples/...")

// pluginBinaryRule: every command that links the plugin SDK is a plugin
// binary, wherever it is written (plugins/examples, internal/testplugins, a
// new directory), and none links a provider SDK: a plugin starts in
// milliseconds and carries no LLM client. The binaries are found in the
// graph, not listed, so a new plugin is covered the day it is added.
//
// Nor does one link go-plugin's server side: the SDK speaks the protocol
// with gRPC alone (sdk/grpcserve.go), and go-plugin's net/rpc, gob, yamux
// and gRPC reflection would cost every plugin process their package
// initialisation at start. (A plugin written against plain go-plugin does
// not link the SDK and is not checked.)
var pluginBinaryRule = DepRule{
	Name:   "plugin binaries link no provider SDK and no go-plugin",
	Forbid: slices.Concat(llmSDKs, []string{"github.com/hashicorp/go-plugin/...", "net/rpc", "encoding/gob", "google.golang.org/grpc/reflection/..."}),
}

// hiddenPackages must not show through any public package's API: the
// toolchain stops other modules importing them, and this stops a public
// package handing their types out (a result, a field, an alias).
var hiddenPackages = in("internal/...")

// wireRule: the wire types and the host/plugin glue stay with the adapters.
var wireRule = ImportRule{
	Name:   "internal/wire is imported only by the adapters",
	Target: in("internal/wire/..."),
	// plugins/node and plugins/python: their tests check the plugins'
	// handshake against the host's own constants.
	AllowedBy: in("internal/pluginhost/...", "sdk/...", "plugins/node", "plugins/python"),
}

// testDepRule: only the providers' tests and those that drive the
// providers end to end (Except) may link an LLM SDK. None is linked
// today (see llmSDKs); one brought back for a test would again put the
// longest compiles of a cold build into every test run.
var testDepRule = TestClosureRule{
	Name: "tests that do not need an LLM SDK link none",
	From: in("core/...", "hooks/...", "sdk/...", "plugins/...", "client/...", "config/...", "internal/..."),
	// Tests only, never what a core package links (coreRules): core/engine
	// and core/explore test the exploring worker end to end through the
	// providers' tool calling against loopback servers, which no fake of
	// summary.ToolCaller would check.
	// internal/wiring builds the providers, as the commands do.
	Except: in("summarize/llm/...", "internal/archtest", "internal/wiring", "core/engine", "core/explore"),
	Forbid: llmSDKs,
}

// protoRule: generated protobuf types never leak past the adapter packages.
// internal/testplugins/automtls is a plugin built with plain go-plugin, on
// purpose without the SDK, as plugins made before it are.
var protoRule = ImportRule{
	Name:      "the hooks protobuf package is imported only by its adapters",
	Target:    in("internal/gen/pith/hooks/v1/..."),
	AllowedBy: in("internal/wire/...", "internal/pluginhost/...", "sdk/...", "internal/testplugins/automtls"),
}

// sessionProtoRule: the generated SessionService stays behind the daemon
// and the public client that wraps it (cmd/host's tests forge raw requests).
var sessionProtoRule = ImportRule{
	Name:      "the session protobuf package is imported only by server and client",
	Target:    in("internal/gen/pith/session/v1/..."),
	AllowedBy: in("internal/server/...", "client/...", "cmd/host"),
}

// wiringRule: the composition root is used by the commands only; a
// library that imported it would build its own summarizers and plugins
// instead of being given them.
var wiringRule = ImportRule{
	Name:      "internal/wiring is imported only by the commands",
	Target:    in("internal/wiring/..."),
	AllowedBy: in("cmd/..."),
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
	for _, r := range slices.Concat(coreRules, depRules) {
		t.Run(r.Name, func(t *testing.T) {
			violations, checked := r.Check(g)
			for _, v := range violations {
				t.Error(short(v))
			}
			t.Logf("checked %d packages: %s", len(checked), trimModule(checked))
		})
	}
	t.Run(pluginBinaryRule.Name, func(t *testing.T) {
		r := pluginBinaryRule
		r.From = g.Linkers(module+"/sdk", own)
		// The rule must not pass by finding nothing: these two are plugin
		// binaries today.
		for _, known := range in("plugins/examples/guard", "internal/testplugins/scripted") {
			if !slices.Contains(r.From, known) {
				t.Errorf("%s is a plugin binary but was not found among the commands linking sdk: %s", short(known), trimModule(r.From))
			}
		}
		violations, checked := r.Check(g)
		for _, v := range violations {
			t.Error(short(v))
		}
		t.Logf("checked %d plugin binaries: %s", len(checked), trimModule(checked))
	})
	t.Run("the example plugins import only sdk and the standard library", func(t *testing.T) {
		for _, path := range g.Select(examplePlugins...) {
			for _, imp := range g[path].Imports {
				std := !strings.Contains(strings.Split(imp, "/")[0], ".")
				if !std && !Match(module+"/sdk/...", imp) {
					t.Errorf("%s imports %s", short(path), short(imp))
				}
			}
		}
	})
	t.Run("no public API exposes an internal type", func(t *testing.T) {
		leaks, err := SurfaceLeaks(context.Background(), goBin, "", hiddenPackages, own)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range leaks {
			t.Error(short(l))
		}
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
	for _, r := range []ImportRule{protoRule, sessionProtoRule, wiringRule} {
		t.Run(r.Name, func(t *testing.T) {
			for _, v := range r.Check(g, own) {
				t.Error(short(v))
			}
		})
	}
}

func trimModule(paths []string) string { return short(strings.Join(paths, " ")) }

// short drops the module prefix from the import paths in s, for reading.
func short(s string) string { return strings.ReplaceAll(s, module+"/", "") }

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
