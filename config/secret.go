package config

import (
	"strings"

	"github.com/pith-dev/pith/internal/credential"
	"github.com/pith-dev/pith/internal/redact"
)

// Credentials belong in the environment, referred to by name (authEnv,
// apiKeyEnv). Values can still slip into free-form places — a plugin's env
// and args, a URL's user info — so display masks whatever looks secret
// there: by its name (secretName) or by its value (credential.Is, the
// token formats the workspace deny list knows too).

// secretWords mark a name (an environment variable, a flag, a query
// parameter) whose value is a credential.
var secretWords = []string{
	"secret", "password", "passwd", "token", "apikey", "accesskey",
	"privatekey", "credential", "auth", "cookie",
}

// credentialKey reports whether an unknown configuration key looks like an
// attempt to write a credential inline (apiKey, token, password, …): those
// get a hint to use an environment variable. Narrower than secretName,
// which errs on the side of masking: a key merely ending in "Key"
// (primaryKey, monkey) is just unknown.
func credentialKey(name string) bool {
	n := normalizeKey(name)
	if n == "key" {
		return true
	}
	for _, w := range secretWords {
		if strings.Contains(n, w) {
			return secretName(name)
		}
	}
	return false
}

// secretName reports whether name looks like it holds a credential.
func secretName(name string) bool {
	n := normalizeKey(name)
	// Names that refer to a secret rather than hold one, and token counts.
	if strings.HasSuffix(n, "env") || strings.HasSuffix(n, "tokens") || strings.HasSuffix(n, "header") {
		return false
	}
	for _, w := range secretWords {
		if strings.Contains(n, w) {
			return true
		}
	}
	return n == "key" || strings.HasSuffix(n, "key")
}

// maskURL hides the user info and the values of secret-looking query
// parameters; the rest of the URL stays readable.
func maskURL(s string) string { return redact.URL(s, secretName) }

// maskArgs masks the values of secret-looking flags: "--token=abc" and
// "--token abc" both lose "abc".
func maskArgs(args []any) []any {
	out := make([]any, len(args))
	maskNext := false
	for i, a := range args {
		s, _ := a.(string)
		switch {
		case maskNext:
			s, maskNext = redact.Mask, false
		case strings.HasPrefix(s, "-"):
			name, _, hasValue := strings.Cut(strings.TrimLeft(s, "-"), "=")
			if secretName(name) {
				if hasValue {
					s = s[:strings.Index(s, "=")+1] + redact.Mask
				} else {
					maskNext = true
				}
			}
		case credential.Is(s):
			s = redact.Mask
		}
		out[i] = s
	}
	return out
}
