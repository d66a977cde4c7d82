package config

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestRemoteEndpointPlainURL: compaction.remoteEndpoint may be a plain
// URL string, as pi's settings write it — short for {url: …}, the other
// keys at their defaults; in every format. Another string-for-a-table is
// still refused.
func TestRemoteEndpointPlainURL(t *testing.T) {
	dir := t.TempDir()
	for name, data := range map[string]string{
		"a.json": `{"compaction":{"remoteEndpoint":"https://summarizer.example/v1/summarize"}}`,
		"a.yaml": "compaction:\n  remoteEndpoint: https://summarizer.example/v1/summarize\n",
		"a.toml": "[compaction]\nremoteEndpoint = \"https://summarizer.example/v1/summarize\"\n",
	} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := Load(path)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		r := cfg.Compaction.RemoteEndpoint
		if r.URL != "https://summarizer.example/v1/summarize" || r.Timeout != 2*time.Minute {
			t.Errorf("%s: %+v", name, r)
		}
	}
	path := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(path, []byte(`{"compaction":{"rehydrate":"yes"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err == nil {
		t.Error("a string for another table was accepted")
	}
}
