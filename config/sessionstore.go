package config

import (
	"net/url"
	"strings"
	"time"

	"github.com/pith-dev/pith/internal/redact"
)

// sessions.store names the store of the daemon's sessions: empty for the
// files under sessions.root, or a PostgreSQL URL. Its password is a
// credential, so everything here that produces text for people masks it.

// postgresURL reports whether s is a PostgreSQL URL (by its scheme).
func postgresURL(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// store validates sessions.store. The value never appears in a
// problem: a URL that does not parse may hold its password anywhere.
func (v *validator) store(s string, leaseTTL time.Duration) {
	if leaseTTL < time.Second {
		v.add("sessions.leaseTTL", "must be at least 1s (a lease is renewed every third of it)")
	}
	if s == "" {
		return
	}
	if !postgresURL(s) {
		v.add("sessions.store", "must be empty (the files store under sessions.root) or a postgres:// URL")
		return
	}
	u, err := url.Parse(s)
	if err != nil {
		v.add("sessions.store", "is not a valid URL (check its quoting: a password with '@', '/' or '%%' must be percent-encoded)")
		return
	}
	if u.Fragment != "" {
		v.add("sessions.store", "a PostgreSQL URL has no #fragment")
	}
}

// StoreDisplay is sessions.store as logs and messages show it: the
// password (and any credential-looking query parameter) masked, "files"
// for the default.
func (s Sessions) StoreDisplay() string {
	if s.Store == "" {
		return "files"
	}
	// A PostgreSQL URL's user info without a password is the role name,
	// worth showing; maskURL would hide it as a possible token.
	if u, err := url.Parse(s.Store); err == nil && u.User != nil {
		if _, hasPassword := u.User.Password(); !hasPassword {
			user := u.User
			u.User = nil
			masked, err := url.Parse(maskURL(u.String()))
			if err == nil {
				masked.User = user
				return masked.String()
			}
		}
	}
	return maskURL(s.Store)
}

// Scrub removes sessions.store's password from text about the store, such
// as an error from the database driver, which may quote the URL it was
// given: the password never reaches a log or a client.
func (s Sessions) Scrub(text string) string {
	if s.Store == "" {
		return text
	}
	if s.Store != maskURL(s.Store) {
		text = strings.ReplaceAll(text, s.Store, maskURL(s.Store))
	}
	for _, secret := range storeSecrets(s.Store) {
		text = strings.ReplaceAll(text, secret, redact.Mask)
	}
	return text
}

// storeSecrets are the credential values in a store URL, as written and
// decoded: the user info's password and credential-looking query
// parameters.
func storeSecrets(raw string) []string {
	var out []string
	add := func(s string) {
		if len(s) >= 3 { // masking "a" everywhere would garble the text
			out = append(out, s)
		}
	}
	// As written: between the user's ':' and the last '@' of the
	// authority, whether or not the URL parses.
	rest := raw[strings.Index(raw, "://")+3:]
	if i := strings.IndexAny(rest, "/?"); i >= 0 && strings.LastIndex(rest[:i], "@") >= 0 {
		rest = rest[:i]
	}
	if at := strings.LastIndex(rest, "@"); at >= 0 {
		if _, pw, ok := strings.Cut(rest[:at], ":"); ok {
			add(pw)
		}
	}
	u, err := url.Parse(raw)
	if err != nil {
		return out
	}
	if u.User != nil {
		if pw, ok := u.User.Password(); ok {
			add(pw)
		}
	}
	for k, vs := range u.Query() {
		if secretName(k) {
			for _, v := range vs {
				add(v)
				add(url.QueryEscape(v))
			}
		}
	}
	return out
}
