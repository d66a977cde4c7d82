package workspace

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// secretFiles is a home directory's worth of credentials, each holding
// the marker SECRET so a leak is easy to see.
var secretFiles = map[string]string{
	".ssh/id_ed25519":               "SECRET ssh key\n",
	".ssh/config":                   "Host x\n  IdentityFile SECRET\n",
	".ssh/known_hosts":              "SECRET host\n",
	".gnupg/private-keys-v1.d/k":    "SECRET gpg\n",
	".aws/credentials":              "[default]\naws_secret_access_key = SECRET\n",
	".azure/accessTokens.json":      `{"SECRET":1}` + "\n",
	".config/gcloud/credentials.db": "SECRET gcloud\n",
	".kube/config":                  "token: SECRET\n",
	".docker/config.json":           `{"auths":{"SECRET":1}}` + "\n",
	".config/gh/hosts.yml":          "oauth_token: SECRET\n",
	".env":                          "API_KEY=SECRET\n",
	".env.local":                    "API_KEY=SECRET\n",
	"proj/.envrc":                   "export TOKEN=SECRET\n",
	".netrc":                        "machine x password SECRET\n",
	".git-credentials":              "https://u:SECRET@example.com\n",
	".pgpass":                       "*:*:*:*:SECRET\n",
	"proj/server.pem":               "SECRET cert and key\n",
	"proj/tls.KEY":                  "SECRET key\n",
	"proj/id_rsa.bak":               "SECRET\n",
	".SSH/ID_RSA":                   "SECRET upper-case\n",
}

const pemKey = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\nSECRETSECRETSECRET\n-----END OPENSSH PRIVATE KEY-----\n"

// TestDenyDefault: every credential file of a home directory used as the
// workspace is refused, by name (in any case), through a link named
// innocently, through "..", and by a private key's header in any file;
// the refusal says only that, and the rest of the workspace reads on.
func TestDenyDefault(t *testing.T) {
	files := map[string]string{"proj/main.go": "package main\n"}
	for name, content := range secretFiles {
		files[name] = content
	}
	files["proj/notes.txt"] = "my notes\n" + pemKey
	files["proj/sa.json"] = `{"type":"service_account","private_key":"-----BEGIN PRIVATE KEY-----\nMIIEvQSECRET\n-----END PRIVATE KEY-----\n"}` + "\n"
	files["proj/rsa.txt"] = "-----BEGIN RSA PRIVATE KEY-----\nSECRET\n"
	files["proj/pgp.asc"] = "-----BEGIN PGP PRIVATE KEY BLOCK-----\nSECRET\n"
	files["proj/putty.txt"] = "PuTTY-User-Key-File-3: ssh-ed25519\nSECRET\n"
	files["proj/doc.md"] = "Keys start with -----BEGIN … PRIVATE KEY-----, which this prose is not.\n"
	w, dir := newWorkspace(t, files)
	if err := os.Symlink("../.ssh/id_ed25519", filepath.Join(dir, "proj", "readme.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../.aws", filepath.Join(dir, "proj", "settings")); err != nil {
		t.Fatal(err)
	}

	asks := []string{"proj/readme.txt", "proj/settings/credentials", "proj/../.ssh/id_ed25519", filepath.Join(dir, ".netrc"),
		"proj/notes.txt", "proj/sa.json", "proj/rsa.txt", "proj/pgp.asc", "proj/putty.txt", ".Ssh/Id_Ed25519", ".ssh/missing"}
	for name := range secretFiles {
		asks = append(asks, name)
	}
	for _, p := range asks {
		f, err := w.Read(p, ReadOptions{})
		if !errors.Is(err, ErrDenied) {
			t.Errorf("Read(%q) = %v, %v; want denied", p, f, err)
			continue
		}
		if strings.Contains(err.Error(), "SECRET") || strings.Contains(err.Error(), "bytes") || f != nil {
			t.Errorf("Read(%q): the refusal says too much: %v", p, err)
		}
	}
	// A window that starts after the key's header line is refused too.
	if _, err := w.Read("proj/notes.txt", ReadOptions{Offset: 3}); !errors.Is(err, ErrDenied) {
		t.Errorf("a window after the header: %v", err)
	}
	for _, p := range []string{"proj/main.go", "proj/doc.md"} {
		if _, err := w.Read(p, ReadOptions{}); err != nil {
			t.Errorf("Read(%q): %v", p, err)
		}
	}
	b := w.BuildMessage([]string{"proj/main.go", ".aws/credentials", "proj/readme.txt"}, nil, BuildOptions{BudgetTokens: 1000})
	if strings.Contains(b.Text, "SECRET") || !strings.Contains(b.Text, ".aws/credentials (denied by the workspace deny list)") {
		t.Errorf("built message = %s", b.Text)
	}
}

// A workspace that is itself a denied folder reads nothing.
func TestDenyWorkspaceDir(t *testing.T) {
	_, dir := newWorkspace(t, map[string]string{".ssh/known_hosts": "SECRET\n"})
	w, err := Open(filepath.Join(dir, ".ssh"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.Read("known_hosts", ReadOptions{}); !errors.Is(err, ErrDenied) {
		t.Errorf("Read = %v; want denied", err)
	}
}

// The configured list extends the default one, or replaces it.
func TestDenyConfigured(t *testing.T) {
	files := map[string]string{"a/secrets.yaml": "x\n", "b/c/d.txt": "x\n", ".env": "x\n", "ok.txt": "x\n"}
	extended, err := NewDenyList([]string{"secrets.*", "c/*.txt"}, true)
	if err != nil {
		t.Fatal(err)
	}
	replaced, err := NewDenyList([]string{"ok.txt"}, false)
	if err != nil {
		t.Fatal(err)
	}
	_, dir := newWorkspace(t, files)
	for _, tc := range []struct {
		d      *DenyList
		denied map[string]bool
	}{
		{extended, map[string]bool{"a/secrets.yaml": true, "b/c/d.txt": true, ".env": true}},
		{replaced, map[string]bool{"ok.txt": true}},
		{&DenyList{}, map[string]bool{}},
	} {
		w, err := Open(dir, Options{Deny: tc.d})
		if err != nil {
			t.Fatal(err)
		}
		for name := range files {
			_, err := w.Read(name, ReadOptions{})
			if got := errors.Is(err, ErrDenied); got != tc.denied[name] || (!got && err != nil) {
				t.Errorf("%v: Read(%q) = %v", tc.denied, name, err)
			}
		}
		w.Close()
	}
	for _, bad := range []string{"", "/etc/x", "a//b", "../x", "[", `a\b`} {
		if _, err := NewDenyList([]string{bad}, true); err == nil {
			t.Errorf("pattern %q accepted", bad)
		}
	}
}

// Under opens a workspace only under one of its roots, links resolved.
func TestUnder(t *testing.T) {
	base := t.TempDir()
	cur := filepath.Join(base, "cur")
	other := filepath.Join(base, "other")
	for _, d := range []string{filepath.Join(cur, "sub"), other} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(other, filepath.Join(cur, "out")); err != nil {
		t.Fatal(err)
	}
	open := Under(cur)
	for _, cwd := range []string{cur, filepath.Join(cur, "sub"), filepath.Join(cur, "sub", "..")} {
		w, err := open(cwd, Options{})
		if err != nil {
			t.Fatalf("%s: %v", cwd, err)
		}
		w.Close()
	}
	for _, cwd := range []string{other, base, filepath.Join(cur, "out"), filepath.Join(cur, "..", "other")} {
		w, err := open(cwd, Options{})
		var nc *NotChosenError
		if err == nil || !errors.As(err, &nc) || !errors.Is(err, ErrNoWorkspaces) {
			t.Errorf("%s: %v, %v", cwd, w, err)
		}
	}
	w, err := Under(cur, other)(other, Options{})
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
}

// TestDenyTokenInContent: a file that holds an API token in a known
// format — a config file, a script — is refused as a private key is, in
// any window of it; with workspace.denyDefaults: false it is read.
func TestDenyTokenInContent(t *testing.T) {
	token := "ghp_" + strings.Repeat("aB3", 12) // built, not written out: see internal/credential
	files := map[string]string{
		"proj/config.py":  "DEBUG = False\nGITHUB_TOKEN = \"" + token + "\"\nTIMEOUT = 30\n",
		"proj/deploy.sh":  "#!/bin/sh\nexport AWS_ACCESS_KEY_ID=AKIA" + strings.Repeat("Q7", 8) + "\naws s3 sync . s3://bucket\n",
		"proj/tokens.md":  "GitHub tokens start with ghp_ and AWS key ids with AKIA.\n",
		"proj/handler.go": "package proj\n\nfunc skLearn() string { return \"sk-learn\" }\n",
	}
	w, dir := newWorkspace(t, files)
	for _, p := range []string{"proj/config.py", "proj/deploy.sh"} {
		if _, err := w.Read(p, ReadOptions{}); !errors.Is(err, ErrDenied) {
			t.Errorf("Read(%q) = %v; want denied", p, err)
		}
	}
	if _, err := w.Read("proj/config.py", ReadOptions{Offset: 3}); !errors.Is(err, ErrDenied) {
		t.Errorf("a window after the token's line: %v; want denied", err)
	}
	for _, p := range []string{"proj/tokens.md", "proj/handler.go"} {
		if _, err := w.Read(p, ReadOptions{}); err != nil {
			t.Errorf("Read(%q): %v", p, err)
		}
	}
	own, err := NewDenyList(nil, false)
	if err != nil {
		t.Fatal(err)
	}
	w2, err := Open(dir, Options{Deny: own})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	if f, err := w2.Read("proj/config.py", ReadOptions{}); err != nil || !strings.Contains(f.Content, token) {
		t.Errorf("without the defaults: %v, %v", f, err)
	}
}
