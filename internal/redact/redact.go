// Package redact hides credentials in a URL before it is shown: in an
// error message, a log line or `pith config show`. It is the one URL
// redactor of the module; what counts as a secret query parameter is the
// caller's knowledge, passed in.
package redact

import "net/url"

// Mask is what a hidden value is replaced with, in a URL and everywhere
// else a credential is kept from people (`pith config show`, errors), so
// that one string means "masked" wherever it is seen. Letters, because a
// URL percent-encodes most punctuation: "********" would show as
// "%2A%2A…" in user info and query values.
const Mask = "xxxxx"

// URL returns raw with its credentials masked: the password of the user
// info (or the user info itself when it has no password, a bare token), the
// value of every query parameter secret reports true for — of every
// parameter when secret is nil, for text where no name can be trusted —
// and the fragment dropped. A URL with nothing to hide comes back byte for
// byte; one that does not parse becomes "(unparsable URL)", since a
// secret could sit anywhere in it.
func URL(raw string, secret func(param string) bool) string {
	if raw == "" {
		return raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	changed := false
	if u.User != nil {
		if _, hasPassword := u.User.Password(); hasPassword {
			u.User = url.UserPassword(u.User.Username(), Mask)
		} else {
			u.User = url.User(Mask)
		}
		changed = true
	}
	if u.RawQuery != "" {
		q := u.Query()
		for name, values := range q {
			if secret != nil && !secret(name) {
				continue
			}
			for i := range values {
				values[i] = Mask
			}
			changed = true
		}
		if changed {
			u.RawQuery = q.Encode()
		}
	}
	if u.Fragment != "" || u.RawFragment != "" {
		u.Fragment, u.RawFragment = "", ""
		changed = true
	}
	if !changed {
		return raw
	}
	return u.String()
}
