package config

import (
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pith-dev/pith/internal/redact"
)

var update = flag.Bool("update", false, "rewrite golden files")

func TestSecretName(t *testing.T) {
	for name, want := range map[string]bool{
		"GITHUB_TOKEN": true, "API_KEY": true, "apiKey": true, "DB_PASSWORD": true,
		"AWS_SECRET_ACCESS_KEY": true, "Authorization": true, "client-secret": true,
		"AUDIT_LEVEL": false, "apiKeyEnv": false, "authHeader": false,
		"reserveTokens": false, "HOME": false, "LOG_FORMAT": false,
	} {
		if got := secretName(name); got != want {
			t.Errorf("secretName(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestCredentialKey: only names of credentials get the inline-credential
// hint; any other unknown key ending in "Key" is just unknown.
func TestCredentialKey(t *testing.T) {
	for name, want := range map[string]bool{
		"apiKey": true, "api_key": true, "key": true, "token": true, "password": true, "secretAccessKey": true, "privateKey": true,
		"primaryKey": false, "monkey": false, "sortKey": false, "apiKeyEnv": false, "reserveTokens": false,
	} {
		if got := credentialKey(name); got != want {
			t.Errorf("credentialKey(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestMaskURL(t *testing.T) {
	for in, want := range map[string]string{
		"":                                     "",
		"https://s.example/v1":                 "https://s.example/v1",
		"https://u:pw@s.example/v1":            "https://u:xxxxx@s.example/v1",
		"https://tok@s.example/v1":             "https://xxxxx@s.example/v1",
		"https://s.example/v1?api_key=abc&x=1": "https://s.example/v1?api_key=xxxxx&x=1",
		"https://s.example/v1?model=m":         "https://s.example/v1?model=m",
	} {
		if got := maskURL(in); got != want {
			t.Errorf("maskURL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestMaskArgs(t *testing.T) {
	in := []any{"--file", "a.jsonl", "--token", "abc", "--api-key=xyz", "-v", "sk-abcdefghijklmnop", "--password"}
	want := []any{"--file", "a.jsonl", "--token", redact.Mask, "--api-key=" + redact.Mask, "-v", redact.Mask, "--password"}
	if got := maskArgs(in); !reflect.DeepEqual(got, want) {
		t.Errorf("maskArgs = %v, want %v", got, want)
	}
}

// secretConfig has a secret in every place one can hide.
func secretConfig() *Config {
	c := Defaults()
	c.Compaction.RemoteEndpoint.URL = "https://user:hunter2@sum.example/v1?token=t0ps3cret"
	c.Compaction.RemoteEndpoint.AuthEnv = "SUMMARIZER_TOKEN"
	c.Summarizer.Provider, c.Summarizer.Model, c.Summarizer.APIKeyEnv = ProviderOpenAI, "gpt-4o-mini", "OPENAI_API_KEY"
	c.Summarizer.Candidates = []Candidate{{Provider: ProviderAnthropic, Model: "claude-haiku-4-5", APIKeyEnv: "ANTHROPIC_API_KEY"}}
	c.Plugins = []Plugin{{
		Name: "audit", Path: "/opt/pith/audit",
		Args:     []string{"--file", "audit.jsonl", "--token", "hunter3", "--secret=hunter4"},
		Env:      map[string]string{"AUDIT_LEVEL": "info", "GITHUB_TOKEN": "hunter5", "OTHER": "sk-abcdefghijklmnop"},
		Priority: 100, Timeout: 5 * time.Second, Failure: FailureOpen,
	}}
	c.Sessions.Root = "/var/lib/pith/sessions"
	c.Sessions.Store = "postgres://pith:hunter6@db.internal:5432/pith?sslmode=require&password=hunter7"
	return c
}

func TestRenderMasksSecretsGolden(t *testing.T) {
	c := secretConfig()
	for _, f := range []Format{FormatYAML, FormatTOML, FormatJSON} {
		t.Run(string(f), func(t *testing.T) {
			got, err := c.Render(f, true)
			if err != nil {
				t.Fatal(err)
			}
			for _, secret := range []string{"hunter2", "t0ps3cret", "hunter3", "hunter4", "hunter5", "hunter6", "hunter7", "sk-abcdefghijklmnop"} {
				if strings.Contains(string(got), secret) {
					t.Errorf("rendered output shows %q", secret)
				}
			}
			golden := filepath.Join("testdata", "show.golden."+string(f))
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if string(got) != string(want) {
				t.Errorf("output differs from %s:\n%s", golden, got)
			}
		})
	}
}

func TestRenderRoundTrip(t *testing.T) {
	dir := t.TempDir()
	c := Defaults()
	c.Compaction.KeepRecentTokens = 1234
	c.Retry.MaxBackoff = 90 * time.Second
	c.Summarizer.Candidates = []Candidate{{Provider: ProviderOpenAI, Model: "m", APIKeyEnv: "K"}}
	resolvePaths(c, filepath.Join(dir, "x"))
	for _, f := range []Format{FormatYAML, FormatTOML, FormatJSON} {
		out, err := c.Render(f, false)
		if err != nil {
			t.Fatal(err)
		}
		back, err := Load(writeFile(t, dir, "c."+string(f), string(out)), noEnv)
		if err != nil {
			t.Fatalf("%s: rendered output does not load: %v", f, err)
		}
		if !reflect.DeepEqual(back, c) {
			t.Errorf("%s: round trip changed %v", f, Diff(c, back))
		}
	}
	if _, err := c.Render("xml", false); err == nil {
		t.Error("an unknown format must be an error")
	}
}

func TestFormatDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		5 * time.Second: "5s", time.Minute: "1m", 90 * time.Second: "1m30s",
		time.Hour: "1h", 150 * time.Millisecond: "150ms", 0: "0s", time.Hour + time.Second: "1h0m1s",
	} {
		if got := formatDuration(d); got != want {
			t.Errorf("formatDuration(%v) = %q, want %q", d, got, want)
		}
	}
}
