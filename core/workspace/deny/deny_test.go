package deny

import (
	"strings"
	"testing"
)

// privateKeyAt knows the key formats and not prose or code about them.
func TestPrivateKeyAt(t *testing.T) {
	for s, want := range map[string]bool{
		"-----BEGIN PRIVATE KEY-----":                     true,
		"x -----BEGIN ENCRYPTED PRIVATE KEY----- y":       true,
		"-----BEGIN SSH2 ENCRYPTED PRIVATE KEY-----":      true,
		"-----BEGIN PGP PRIVATE KEY BLOCK-----":           true,
		`"key": "-----BEGIN EC PRIVATE KEY-----\nMHc"`:    true,
		"notes\nPuTTY-User-Key-File-2: ssh-rsa\n":         true,
		"-----BEGIN PUBLIC KEY-----":                      false,
		"-----BEGIN CERTIFICATE-----":                     false,
		"headers look like -----BEGIN … PRIVATE KEY-----": false,
		"-----BEGIN ... PRIVATE KEY-----":                 false,
		`pemBegin = []byte("-----BEGIN ")`:                false,
		`puttyKey = []byte("PuTTY-User-Key-File-")`:       false,
		"-----BEGIN PRIVATE KEY":                          false,
	} {
		if got := privateKeyAt([]byte(s)); got != want {
			t.Errorf("privateKeyAt(%q) = %v", s, got)
		}
	}
}

// TestRefusesContentTokens: the built-in list refuses a token; a list
// without the defaults (workspace.denyDefaults: false) does not. The
// token is built rather than written out: see internal/credential.
func TestRefusesContentTokens(t *testing.T) {
	line := []byte("export GITHUB_TOKEN=ghp_" + strings.Repeat("aB3", 12) + "\n")
	if !Builtin().RefusesContent(line) {
		t.Error("the built-in list does not refuse a GitHub token")
	}
	own, err := New([]string{"secrets.*"}, false)
	if err != nil {
		t.Fatal(err)
	}
	if own.RefusesContent(line) {
		t.Error("a list without the defaults refuses a token")
	}
}
