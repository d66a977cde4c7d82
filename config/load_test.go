package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// noEnv is the load option of tests that must not see the developer's
// PITH_ variables.
var noEnv = WithEnviron(func() []string { return nil })

func environ(vars ...string) Option {
	return WithEnviron(func() []string { return vars })
}

// resolvedDefaults is what Load returns for an empty file.
func resolvedDefaults(t *testing.T) *Config {
	t.Helper()
	c := Defaults()
	resolvePaths(c, filepath.Join(t.TempDir(), "x.yaml"))
	return c
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// writeExecutable creates a file a plugin path may point at.
func writeExecutable(t *testing.T, dir, name string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// problemsOf returns the problems of a *ValidationError, failing the test
// on any other outcome.
func problemsOf(t *testing.T, err error) []Problem {
	t.Helper()
	var verr *ValidationError
	if !errors.As(err, &verr) {
		t.Fatalf("want a *ValidationError, got %v", err)
	}
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("a ValidationError must match ErrInvalid")
	}
	return verr.Problems
}

func hasProblem(ps []Problem, key, reason string) bool {
	for _, p := range ps {
		if p.Key == key && strings.Contains(p.Reason, reason) {
			return true
		}
	}
	return false
}

func TestLoadExamples(t *testing.T) {
	for _, name := range []string{"pith.yaml", "pith.toml", "pith.json"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join("examples", name)
			got, err := Load(path, noEnv)
			if err != nil {
				t.Fatalf("example does not load: %v", err)
			}
			if want := resolvedDefaults(t); !reflect.DeepEqual(got, want) {
				t.Errorf("example differs from the defaults in %v", Diff(want, got))
			}
			// Every key is written out, not left to its default.
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			format, _ := FormatOf(path)
			if format == FormatJSON {
				if data, err = blankJSONComments(data); err != nil {
					t.Fatal(err)
				}
			}
			raw, err := format.parser().Unmarshal(data)
			if err != nil {
				t.Fatal(err)
			}
			written := map[string]bool{}
			var walk func(prefix string, m map[string]any)
			walk = func(prefix string, m map[string]any) {
				for k, v := range m {
					if sub, ok := v.(map[string]any); ok {
						walk(joinKey(prefix, k), sub)
						continue
					}
					written[joinKey(prefix, k)] = true
				}
			}
			walk("", raw)
			for key := range Defaults().Flatten() {
				// An inert key is shown commented out: setting it does
				// nothing, and `config validate --strict` refuses it.
				_, inert := InertKeys[key]
				if inert && written[key] {
					t.Errorf("example sets %s, which has no effect (validate --strict fails on it)", key)
				}
				if !written[key] && !inert {
					t.Errorf("example does not set %s", key)
				}
			}
			// List entries are shown in comments, with every key.
			text := string(data)
			if format == FormatJSON {
				text, _ = readString(path)
			}
			for _, k := range []string{"name", "path", "args", "env", "sha256", "priority", "timeout", "failure", "provider", "model", "baseUrl", "apiKeyEnv"} {
				if !strings.Contains(text, k) {
					t.Errorf("example never mentions list-entry key %s", k)
				}
			}
		})
	}
}

func readString(path string) (string, error) {
	b, err := os.ReadFile(path)
	return string(b), err
}

func TestLoadFormatsAgree(t *testing.T) {
	dir := t.TempDir()
	bin := writeExecutable(t, dir, "audit")
	files := map[string]string{
		"c.yaml": `
compaction:
  keepRecentTokens: 5000
  remoteEndpoint: {url: "https://sum.example/v1", timeout: 3s}
pruning:
  protectedTools: [read]
plugins:
  - name: audit
    path: ./audit
    args: ["--file", "a.jsonl"]
    env: {AUDIT_LEVEL: info}
    priority: 10
`,
		"c.toml": `
[compaction]
keepRecentTokens = 5000
[compaction.remoteEndpoint]
url = "https://sum.example/v1"
timeout = "3s"
[pruning]
protectedTools = ["read"]
[[plugins]]
name = "audit"
path = "./audit"
args = ["--file", "a.jsonl"]
env = { AUDIT_LEVEL = "info" }
priority = 10
`,
		"c.json": `{
  "compaction": {"keepRecentTokens": 5000, "remoteEndpoint": {"url": "https://sum.example/v1", "timeout": "3s"}},
  "pruning": {"protectedTools": ["read"]},
  "plugins": [{"name": "audit", "path": "./audit", "args": ["--file", "a.jsonl"], "env": {"AUDIT_LEVEL": "info"}, "priority": 10}]
}`,
	}
	want := Defaults()
	resolvePaths(want, filepath.Join(dir, "c.yaml"))
	want.Compaction.KeepRecentTokens = 5000
	want.Compaction.RemoteEndpoint.URL = "https://sum.example/v1"
	want.Compaction.RemoteEndpoint.Timeout = 3 * time.Second
	want.Pruning.ProtectedTools = []string{"read"}
	p := defaultPlugin()
	p.Name, p.Path, p.Priority = "audit", bin, 10
	p.Args = []string{"--file", "a.jsonl"}
	p.Env = map[string]string{"AUDIT_LEVEL": "info"}
	want.Plugins = []Plugin{p}

	for name, content := range files {
		t.Run(name, func(t *testing.T) {
			got, err := Load(writeFile(t, dir, name, content), noEnv)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("differs from the expected configuration in %v", Diff(want, got))
			}
		})
	}
}

func TestLoadPluginDefaultsAndPaths(t *testing.T) {
	dir := t.TempDir()
	writeExecutable(t, dir, "a")
	sub := filepath.Join(dir, "bin")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	b := writeExecutable(t, sub, "b")
	path := writeFile(t, dir, "p.yaml", `
plugins:
  - name: a
    path: a
  - name: b
    path: `+b+`
    priority: 0
    timeout: 250ms
    failure: closed
`)
	c, err := Load(path, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	a := c.Plugins[0]
	if a.Path != filepath.Join(dir, "a") || a.Priority != DefaultPluginPriority || a.Timeout != DefaultPluginTimeout || a.Failure != FailureOpen {
		t.Errorf("entry a did not get the defaults: %+v", a)
	}
	if a.Args == nil || a.Env == nil {
		t.Errorf("entry a: args and env must be empty, not nil: %+v", a)
	}
	pb, ok := c.Plugin("b")
	if !ok || pb.Priority != 0 || pb.Timeout != 250*time.Millisecond || pb.Failure != FailureClosed || pb.Path != b {
		t.Errorf("entry b lost explicit values: %+v", pb)
	}
}

func TestLoadEmptyAndMissing(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"empty.yaml", "empty.toml", "empty.json"} {
		c, err := Load(writeFile(t, dir, name, "\n"), noEnv)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(c, resolvedDefaults(t)) {
			t.Errorf("%s: an empty file must give the defaults", name)
		}
	}
	// A key with no value keeps its default.
	c, err := Load(writeFile(t, dir, "null.yaml", "compaction:\n  reserveTokens:\nbranchSummary:\n"), noEnv)
	if err != nil || c.Compaction.ReserveTokens != 16384 {
		t.Errorf("empty values: %v, reserveTokens %d", err, c.Compaction.ReserveTokens)
	}
	if _, err := Load(filepath.Join(dir, "nope.yaml"), noEnv); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: want ErrNotExist, got %v", err)
	}
	if _, err := Load(writeFile(t, dir, "c.ini", "a=1"), noEnv); !errors.Is(err, ErrUnsupportedFormat) {
		t.Errorf("unknown extension: want ErrUnsupportedFormat, got %v", err)
	}
	c, err = Load("", environ("PITH_CONTEXTWINDOW=1000000"))
	if err != nil || c.ContextWindow != 1000000 {
		t.Errorf("no file, env only: %v, %d", err, c.ContextWindow)
	}
}

func TestLoadSyntaxErrors(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"bad.yaml":  "compaction:\n  reserveTokens: [\n",
		"dup.yaml":  "compaction: {}\ncompaction: {}\n",
		"bad.toml":  "[compaction\n",
		"bad.json":  `{"compaction": }`,
		"list.yaml": "- a\n- b\n",
	} {
		_, err := Load(writeFile(t, dir, name, content), noEnv)
		if !errors.Is(err, ErrSyntax) || !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: want ErrSyntax, got %v", name, err)
		}
		if err != nil && !strings.Contains(err.Error(), name) {
			t.Errorf("%s: the error must name the file: %v", name, err)
		}
		if err != nil && !strings.Contains(err.Error(), "line ") {
			t.Errorf("%s: the error must name the line: %v", name, err)
		}
	}
}

func TestLoadUnknownKeysAndTypes(t *testing.T) {
	tests := []struct {
		name, content string
		key, reason   string
	}{
		{"typo", "compaction:\n  keepRecentToken: 5\n", "compaction.keepRecentToken", "unknown key"},
		{"case", "compaction:\n  reservetokens: 5\n", "compaction.reservetokens", `did you mean "reserveTokens"`},
		{"snake case", "compaction:\n  retained_tokens: 5\n", "compaction.retained_tokens", `did you mean "retainedTokens"`},
		{"top level", "compation: {}\n", "compation", "unknown key"},
		{"inline secret", "summarizer:\n  apiKey: sk-abcdefghijkl\n", "summarizer.apiKey", "credentials are never written inline"},
		{"inline token", "summarizer:\n  token: abc\n", "summarizer.token", "credentials are never written inline"},
		{"just ends in Key", "compaction:\n  primaryKey: 1\n", "compaction.primaryKey", "unknown key"},
		{"in plugin", "plugins:\n  - name: a\n    path: /bin/sh\n    prio: 1\n", "plugins[0].prio", "unknown key"},
		{"in candidate", "summarizer:\n  candidates:\n    - provider: openai\n      modle: x\n", "summarizer.candidates[0].modle", `did you mean "model"`},
		{"not an int", "compaction:\n  reserveTokens: lots\n", "compaction.reserveTokens", `must be an integer, got "lots"`},
		{"fraction", "compaction:\n  reserveTokens: 1.5\n", "compaction.reserveTokens", "must be an integer, got 1.5"},
		{"not a bool", "compaction:\n  enabled: maybe\n", "compaction.enabled", "must be true or false"},
		{"bare number duration", "retry:\n  maxBackoff: 30\n", "retry.maxBackoff", "must be a duration with a unit"},
		{"bad duration", "plugins:\n  - name: a\n    path: /bin/sh\n    timeout: 5 seconds\n", "plugins[0].timeout", "must be a duration"},
		{"section is a scalar", "compaction: 5\n", "compaction", "must be a table of keys"},
		{"list is a scalar", "plugins: audit\n", "plugins", "must be a list"},
		{"string is a table", "logging:\n  level: {a: 1}\n", "logging.level", "must be a string, got a table"},
		{"env value is a table", "plugins:\n  - name: a\n    path: /bin/sh\n    env: {A: {b: 1}}\n", "plugins[0].env.A", "must be a string"},
		{"empty list entry", "plugins:\n  -\n", "plugins[0]", "empty list entry"},
	}
	dir := t.TempDir()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(writeFile(t, dir, "c.yaml", tc.content), noEnv)
			ps := problemsOf(t, err)
			if !hasProblem(ps, tc.key, tc.reason) {
				t.Errorf("want %s: …%s…, got %v", tc.key, tc.reason, ps)
			}
			if strings.Contains(err.Error(), "sk-abcdefghijkl") {
				t.Errorf("the error repeats a secret: %v", err)
			}
		})
	}
}

func TestLoadEnvOverrides(t *testing.T) {
	tests := []struct {
		name  string
		env   []string
		check func(c *Config) bool
	}{
		{"upper case", []string{"PITH_COMPACTION__KEEPRECENTTOKENS=5000"}, func(c *Config) bool { return c.Compaction.KeepRecentTokens == 5000 }},
		{"snake case", []string{"PITH_COMPACTION__KEEP_RECENT_TOKENS=6000"}, func(c *Config) bool { return c.Compaction.KeepRecentTokens == 6000 }},
		{"camel case", []string{"PITH_compaction__keepRecentTokens=7000"}, func(c *Config) bool { return c.Compaction.KeepRecentTokens == 7000 }},
		{"bool", []string{"PITH_COMPACTION__ENABLED=false"}, func(c *Config) bool { return !c.Compaction.Enabled }},
		{"nested", []string{"PITH_COMPACTION__REMOTEENDPOINT__URL=https://x.example/s", "PITH_COMPACTION__REMOTEENDPOINT__TIMEOUT=2s"},
			func(c *Config) bool {
				return c.Compaction.RemoteEndpoint.URL == "https://x.example/s" && c.Compaction.RemoteEndpoint.Timeout == 2*time.Second
			}},
		{"list", []string{"PITH_PRUNING__PROTECTEDTOOLS=skill, read ,bash"}, func(c *Config) bool {
			return reflect.DeepEqual(c.Pruning.ProtectedTools, []string{"skill", "read", "bash"})
		}},
		{"top-level scalar", []string{"PITH_CONTEXT_WINDOW=1000000"}, func(c *Config) bool { return c.ContextWindow == 1000000 }},
		{"overrides the file", []string{"PITH_RETRY__MAXRETRIES=9"}, func(c *Config) bool { return c.Retry.MaxRetries == 9 }},
		{"other PITH_ variables are left alone", []string{"PITH_CONFIG=/etc/pith.yaml", "PITH_HOME=/x", "OTHER=1"}, func(c *Config) bool { return true }},
	}
	dir := t.TempDir()
	path := writeFile(t, dir, "c.yaml", "retry:\n  maxRetries: 1\n")
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Load(path, environ(tc.env...))
			if err != nil {
				t.Fatal(err)
			}
			if !tc.check(c) {
				t.Errorf("override not applied: %v", Diff(resolvedDefaults(t), c))
			}
		})
	}
}

func TestLoadEnvProblems(t *testing.T) {
	tests := []struct {
		env         string
		key, reason string
	}{
		{"PITH_COMPACTION__KEEPRECENT=1", "PITH_COMPACTION__KEEPRECENT", `compaction has no key "KEEPRECENT"`},
		{"PITH_COMPACTION_KEEPRECENTTOKENS=1", "PITH_COMPACTION_KEEPRECENTTOKENS", "double underscore"},
		{"PITH_COMPACTION=1", "PITH_COMPACTION", "is a section"},
		{"PITH_CONTEXTWINDOW__X=1", "PITH_CONTEXTWINDOW__X", "is a value, not a section"},
		{"PITH_PLUGINS=a", "PITH_PLUGINS", "cannot be set from the environment"},
		{"PITH_SUMMARIZER__CANDIDATES=a", "PITH_SUMMARIZER__CANDIDATES", "cannot be set from the environment"},
		{"PITH_COMPACTION__RESERVETOKENS=abc", "compaction.reserveTokens", "must be an integer"},
		{"PITH_COMPACTION__RESERVETOKENS=-5", "compaction.reserveTokens", "must be > 0"},
	}
	for _, tc := range tests {
		t.Run(tc.env, func(t *testing.T) {
			_, err := Load("", environ(tc.env))
			if ps := problemsOf(t, err); !hasProblem(ps, tc.key, tc.reason) {
				t.Errorf("want %s: …%s…, got %v", tc.key, tc.reason, ps)
			}
		})
	}
	_, err := Load("", environ("PITH_COMPACTION__KEEPRECENTTOKENS=1", "PITH_COMPACTION__KEEP_RECENT_TOKENS=2"))
	if ps := problemsOf(t, err); !hasProblem(ps, "PITH_COMPACTION__KEEP_RECENT_TOKENS", "PITH_COMPACTION__KEEPRECENTTOKENS sets too") {
		t.Errorf("two spellings of one key must be reported, got %v", ps)
	}
	// WithoutEnv ignores even broken variables.
	t.Setenv("PITH_COMPACTION__NOPE", "1")
	if _, err := Load("", WithoutEnv()); err != nil {
		t.Errorf("WithoutEnv: %v", err)
	}
	if _, err := Load(""); err == nil {
		t.Errorf("the process environment must be read by default")
	}
}

func TestLoadPiSettings(t *testing.T) {
	// A pi settings.json's compaction, branchSummary and retry blocks
	// carry over unchanged.
	path := writeFile(t, t.TempDir(), "settings.json", `{
  "compaction": {"enabled": false, "reserveTokens": 8192, "keepRecentTokens": 10000},
  "branchSummary": {"reserveTokens": 4096, "skipPrompt": true},
  "retry": {"enabled": true, "maxRetries": 5, "baseDelayMs": 1000}
}`)
	c, err := Load(path, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if c.Compaction.Enabled || c.Compaction.ReserveTokens != 8192 || c.Compaction.KeepRecentTokens != 10000 ||
		c.BranchSummary.ReserveTokens != 4096 || !c.BranchSummary.SkipPrompt || c.Retry.MaxRetries != 5 || c.Retry.BaseDelayMs != 1000 {
		t.Errorf("pi settings not carried over: %v", Diff(resolvedDefaults(t), c))
	}
}

func TestCloneIsDeep(t *testing.T) {
	c := Defaults()
	c.Plugins = []Plugin{{Name: "a", Args: []string{"x"}, Env: map[string]string{"K": "v"}}}
	d := c.Clone()
	if !reflect.DeepEqual(c, d) {
		t.Fatal("clone differs")
	}
	d.Plugins[0].Args[0], d.Plugins[0].Env["K"], d.Pruning.ProtectedTools[0] = "y", "w", "z"
	if c.Plugins[0].Args[0] != "x" || c.Plugins[0].Env["K"] != "v" || c.Pruning.ProtectedTools[0] != "skill" {
		t.Error("modifying the clone changed the original")
	}
}

func TestJSONDuplicateKeys(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{`{"a": 1, "b": {"c": 1, "d": [1, {"e": 1}]}}`, nil},
		{`{"a": 1, "a": 2}`, []string{"a"}},
		{`{"compaction": {"reserveTokens": 1, "x": [], "reserveTokens": 2}}`, []string{"compaction.reserveTokens"}},
		{`{"plugins": [{"name": "a"}, {"name": "b", "env": {"K": "1", "K": "2"}}]}`, []string{"plugins[1].env.K"}},
		{`{"a": {"b": 1}, "c": {"b": 1}}`, nil},
		{`{"a": ["a", "a"], "b": "a"}`, nil},
		{`{"a": `, nil},
	}
	for _, tc := range tests {
		var got []string
		for _, p := range jsonDuplicateKeys([]byte(tc.in)) {
			got = append(got, p.Key)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("jsonDuplicateKeys(%s) = %v, want %v", tc.in, got, tc.want)
		}
	}
	path := writeFile(t, t.TempDir(), "d.json", `{"retry": {"maxRetries": 1, "maxRetries": 5}}`)
	_, err := Load(path, noEnv)
	if ps := problemsOf(t, err); !hasProblem(ps, "retry.maxRetries", "duplicate key") {
		t.Errorf("want a duplicate-key problem, got %v", ps)
	}
}

func TestLoadSessionsRoot(t *testing.T) {
	dir := t.TempDir()
	home, err := os.UserHomeDir()
	if err != nil {
		t.Skip("no home directory")
	}
	for content, want := range map[string]string{
		"sessions: {root: ./s}\n":        filepath.Join(dir, "s"),
		"sessions: {root: /var/pith}\n":  "/var/pith",
		"sessions: {root: ~/sessions}\n": filepath.Join(home, "sessions"),
		"":                               filepath.Join(home, ".pith", "sessions"),
	} {
		c, err := Load(writeFile(t, dir, "c.yaml", content), noEnv)
		if err != nil {
			t.Fatal(err)
		}
		if c.Sessions.Root != want {
			t.Errorf("%q: sessions.root = %s, want %s", content, c.Sessions.Root, want)
		}
	}
}

func TestScalarConversions(t *testing.T) {
	ints := []struct {
		in   any
		want int64
		ok   bool
	}{
		{int(5), 5, true}, {int8(-5), -5, true}, {int16(5), 5, true}, {int32(5), 5, true}, {int64(5), 5, true},
		{uint8(5), 5, true}, {uint16(5), 5, true}, {uint32(5), 5, true}, {uint(5), 5, true}, {uint64(5), 5, true},
		{uint64(1 << 63), 0, false}, {float64(5), 5, true}, {5.5, 0, false}, {1e300, 0, false},
		{"20_000", 20000, true}, {" 7 ", 7, true}, {"0x10", 0, false}, {true, 0, false}, {nil, 0, false},
	}
	for _, tc := range ints {
		got, ok := toInt(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("toInt(%#v) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
	for in, want := range map[any]string{"s": "s", true: "true", int64(3): "3", 1.5: "1.5", float32(2.5): "2.5"} {
		if got, ok := scalarString(in); !ok || got != want {
			t.Errorf("scalarString(%#v) = %q, %v", in, got, ok)
		}
	}
	if _, ok := scalarString([]any{}); ok {
		t.Error("a list is not a scalar")
	}
	for in, want := range map[any]bool{true: true, "false": false, "1": true} {
		if got, ok := toBool(in); !ok || got != want {
			t.Errorf("toBool(%#v) = %v, %v", in, got, ok)
		}
	}
	if _, ok := toBool(1); ok {
		t.Error("a number is not a bool")
	}
	if m, ok := asMap(map[any]any{1: "a"}); !ok || m["1"] != "a" {
		t.Errorf("asMap of a map with non-string keys: %v", m)
	}
	if got := describe(strings.Repeat("x", 50)); len(got) > 45 {
		t.Errorf("describe does not shorten: %s", got)
	}
}

// TestYAMLErrorsNameTheLine: the YAML library reports the line where the
// enclosing block starts (0-based for parser errors); Load names the line
// that breaks the document.
func TestYAMLErrorsNameTheLine(t *testing.T) {
	dir := t.TempDir()
	for content, want := range map[string]string{
		"compaction:\n  enabled: true\n\tfoo: 1\n":                                      "line 3: found a tab character",
		"compaction:\n  enabled: true\n keepRecentTokens: 2\n":                          "line 3: did not find expected key",
		"compaction:\n  enabled: true\n  reserveTokens: [1, 2\n  keepRecentTokens: 2\n": "line 3: did not find expected",
		"plugins:\n  - name: a\n    path: /bin/sh\n  prio: 1\n":                         "line 4: did not find expected '-' indicator",
		"compaction: {enabled: true\nretry: {}\n":                                       "line 1: did not find expected",
	} {
		_, err := Load(writeFile(t, dir, "c.yaml", content), noEnv)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want %q", content, err, want)
		}
	}
}
