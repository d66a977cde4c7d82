// Package deny is the workspace deny list: the files no model is given,
// by a name on their path or by a private key or an API token in their
// content. It imports the standard library and internal/credential (the
// token formats, itself standard library only) alone, so the plugin SDK
// can hand the host's own list to a plugin that reads a workspace itself.
package deny

import (
	"bytes"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"github.com/pith-dev/pith/internal/credential"
)

// ErrDenied: the file is on the workspace deny list (by a name on its
// path, by the name of what a link on the way leads to, or by a private
// key or an API token in its content). A model told so learns nothing else of the file:
// not whether it exists, not its size.
var ErrDenied = errors.New("denied by the workspace deny list")

// Patterns are the built-in patterns of files no model is given, whatever the
// workspace: private keys and the folders and files where credentials
// live. A pattern is a glob (path.Match) matched, case-insensitively,
// against each name on a file's path — the workspace's own directory
// included — so a folder's pattern denies everything under it; a pattern
// with "/" matches consecutive names (".config/gcloud").
var Patterns = []string{
	// Private keys by name (their content is refused whatever the name:
	// privateKeyAt).
	"id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*", "*.pem", "*.key", "*.p12", "*.pfx", "*.ppk",
	// Key and credential folders of SSH, GnuPG and the cloud CLIs.
	".ssh", ".gnupg", ".aws", ".azure", ".config/gcloud", ".kube", ".docker", ".oci", ".config/gh", ".password-store",
	// Credential files.
	".env*", ".netrc", "_netrc", ".git-credentials", ".pgpass", ".npmrc", ".pypirc", ".vault-token",
}

// List is a set of deny patterns, compiled. The zero value and nil
// deny nothing; New builds one.
type List struct {
	patterns [][]string // lower-cased, split at "/"
	// keys refuses a file holding a private key's header, whatever its
	// name: part of the built-in list.
	keys bool
}

// New compiles patterns, after Patterns and the private-key
// header check when defaults is set.
// A pattern is refused when it is empty, absolute, has an empty name or
// "." or ".." in it, or is not a valid glob.
func New(patterns []string, defaults bool) (*List, error) {
	d := &List{keys: defaults}
	all := patterns
	if defaults {
		all = append(append([]string(nil), Patterns...), patterns...)
	}
	for _, p := range all {
		if err := CheckPattern(p); err != nil {
			return nil, err
		}
		d.patterns = append(d.patterns, strings.Split(strings.ToLower(p), "/"))
	}
	return d, nil
}

// CheckPattern says why p is no deny pattern, or nil.
func CheckPattern(p string) error {
	if strings.TrimSpace(p) == "" {
		return errors.New("empty deny pattern")
	}
	if strings.HasPrefix(p, "/") || strings.Contains(p, `\`) {
		return fmt.Errorf("deny pattern %q: names are matched anywhere on a path; write it without a leading / (and with / between names)", p)
	}
	for _, part := range strings.Split(p, "/") {
		if part == "" || part == "." || part == ".." {
			return fmt.Errorf("deny pattern %q: empty, \".\" or \"..\" name", p)
		}
		if _, err := path.Match(part, ""); err != nil {
			return fmt.Errorf("deny pattern %q: %w", p, err)
		}
	}
	return nil
}

// builtin is Patterns compiled.
var builtin = func() *List {
	d, err := New(nil, true)
	if err != nil {
		panic("deny: bad built-in pattern: " + err.Error())
	}
	return d
}()

// Builtin is the built-in list, Patterns compiled with the private-key
// check.
func Builtin() *List { return builtin }

// Denies reports whether some pattern matches names on p (a path with
// the OS's separators or slashes; absolute or relative). Names are
// compared in lower case: on a case-insensitive filesystem ".SSH" is
// ".ssh".
func (d *List) Denies(p string) bool {
	if d == nil || len(d.patterns) == 0 {
		return false
	}
	var names []string
	for _, n := range strings.Split(filepath.ToSlash(p), "/") {
		if n != "" && n != "." {
			names = append(names, strings.ToLower(n))
		}
	}
	for _, pat := range d.patterns {
		for i := 0; i+len(pat) <= len(names); i++ {
			if matchAll(pat, names[i:i+len(pat)]) {
				return true
			}
		}
	}
	return false
}

func matchAll(pat, names []string) bool {
	for j, part := range pat {
		if ok, _ := path.Match(part, names[j]); !ok {
			return false
		}
	}
	return true
}

var (
	pemBegin = []byte("-----BEGIN ")
	puttyKey = []byte("PuTTY-User-Key-File-")
)

// RefusesContent reports whether b holds a private key's header or an
// API token of a well-known format (credential.Index: a token pasted
// into a config file, a script or a test is refused as a private key
// is), and d refuses such content (the built-in list does). Read checks
// every line it reads; a reader of its own (a plugin) checks what it
// read.
func (d *List) RefusesContent(b []byte) bool {
	return d != nil && d.keys && (privateKeyAt(b) || credential.Index(b) >= 0)
}

// privateKeyAt reports whether b holds the header of a private key:
// a PEM block "-----BEGIN <LABEL> PRIVATE KEY-----" (PKCS#1/#8, EC,
// OpenSSH, encrypted, "PGP PRIVATE KEY BLOCK" included), anywhere on a
// line — a JSON key file holds it inside a string — or a PuTTY key
// file's first line ("PuTTY-User-Key-File-<n>:" at a line's start). The
// label must be upper-case letters, digits and spaces, as PEM's are, so
// prose (and code) about such headers is not taken for one.
func privateKeyAt(b []byte) bool {
	return pemKeyAt(b) || puttyKeyAt(b)
}

func pemKeyAt(b []byte) bool {
	for {
		i := bytes.Index(b, pemBegin)
		if i < 0 {
			return false
		}
		b = b[i+len(pemBegin):]
		j := 0
		for j < len(b) && j < 64 && (b[j] >= 'A' && b[j] <= 'Z' || b[j] >= '0' && b[j] <= '9' || b[j] == ' ') {
			j++
		}
		label := b[:j]
		if bytes.HasPrefix(b[j:], []byte("-----")) &&
			(bytes.HasSuffix(label, []byte("PRIVATE KEY")) || bytes.HasSuffix(label, []byte("PRIVATE KEY BLOCK"))) {
			return true
		}
	}
}

func puttyKeyAt(b []byte) bool {
	for off := 0; ; {
		i := bytes.Index(b[off:], puttyKey)
		if i < 0 {
			return false
		}
		at := off + i
		rest := b[at+len(puttyKey):]
		if (at == 0 || b[at-1] == '\n') && len(rest) >= 2 && rest[0] >= '0' && rest[0] <= '9' && rest[1] == ':' {
			return true
		}
		off = at + len(puttyKey)
	}
}
