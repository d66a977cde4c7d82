package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// rule is one kind of secret: what matches it and how a match is replaced.
// A replacement keeps the non-secret part of a match (the "Bearer " word,
// the user name of a URL) so the summary still reads naturally.
type rule struct {
	kind    string
	re      *regexp.Regexp
	replace string
	// mayMatch is a cheap test that every match passes (a literal every
	// match contains): most strings of a conversation hold no secret, and
	// skipping the regexp for them makes redaction several times cheaper
	// without changing what it replaces.
	mayMatch func(string) bool
}

// contains returns a mayMatch that wants every one of lits.
func contains(lits ...string) func(string) bool {
	return func(s string) bool {
		for _, l := range lits {
			if !strings.Contains(s, l) {
				return false
			}
		}
		return true
	}
}

// containsFold returns a mayMatch that wants the lower-case ASCII word lit
// in any letter case. For "bearer" that covers all (?i) matches: none of
// its letters has a non-ASCII case fold (as k has K, the Kelvin sign).
func containsFold(lit string) func(string) bool {
	return func(s string) bool {
	next:
		for i := 0; i+len(lit) <= len(s); i++ {
			for j := 0; j < len(lit); j++ {
				if s[i+j]|0x20 != lit[j] {
					continue next
				}
			}
			return true
		}
		return false
	}
}

// rules are applied in order. Order matters: a private key block can hold
// anything, and a URL's "user:password@host" would otherwise be half-eaten
// by the e-mail rule.
var rules = []rule{
	{"private-key", regexp.MustCompile(`-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|$)`), "[REDACTED:private-key]", contains("PRIVATE KEY-----")},
	{"jwt", regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{8,}`), "[REDACTED:jwt]", contains("eyJ", ".")},
	{"bearer-token", regexp.MustCompile(`(?i)\b(bearer\s+)[A-Za-z0-9\-._~+/]{12,}=*`), "${1}[REDACTED:bearer-token]", containsFold("bearer")},
	{"api-key", regexp.MustCompile(`\bsk-[A-Za-z0-9_-]{16,}`), "[REDACTED:api-key]", contains("sk-")},
	{"aws-access-key", regexp.MustCompile(`\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`), "[REDACTED:aws-access-key]", func(s string) bool { return strings.Contains(s, "AKIA") || strings.Contains(s, "ASIA") }},
	{"github-token", regexp.MustCompile(`\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})`), "[REDACTED:github-token]", func(s string) bool {
		return strings.Contains(s, "_") && (strings.Contains(s, "gh") || strings.Contains(s, "github_pat_"))
	}},
	{"slack-token", regexp.MustCompile(`\bxox[abposr]-[A-Za-z0-9-]{10,}`), "[REDACTED:slack-token]", contains("xox")},
	{"url-password", regexp.MustCompile(`\b([A-Za-z][A-Za-z0-9+.-]*://[^\s:/@]+:)[^\s@/]+@`), "${1}[REDACTED:password]@", contains("://", "@")},
	{"email", regexp.MustCompile(`\b[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b`), "[REDACTED:email]", contains("@", ".")},
}

// redactor replaces secrets in text and counts what it replaced, by kind.
// The counts are all it remembers: never the values.
type redactor struct {
	counts map[string]int
}

func newRedactor() *redactor { return &redactor{counts: map[string]int{}} }

// text returns s with every secret replaced.
func (r *redactor) text(s string) string {
	for _, ru := range rules {
		if !ru.mayMatch(s) {
			continue
		}
		n := 0
		s = ru.re.ReplaceAllStringFunc(s, func(m string) string {
			n++
			return ru.re.ReplaceAllString(m, ru.replace)
		})
		if n > 0 {
			r.counts[ru.kind] += n
		}
	}
	return s
}

// json returns the message with every string value redacted (keys are
// left alone: they are field names, not data). Numbers keep their exact
// text.
func (r *redactor) json(raw json.RawMessage) (json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("decode message: %w", err)
	}
	out, err := json.Marshal(r.walk(v))
	if err != nil {
		return nil, fmt.Errorf("encode redacted message: %w", err)
	}
	return out, nil
}

func (r *redactor) walk(v any) any {
	switch x := v.(type) {
	case string:
		return r.text(x)
	case []any:
		for i := range x {
			x[i] = r.walk(x[i])
		}
	case map[string]any:
		for k := range x {
			x[k] = r.walk(x[k])
		}
	}
	return v
}

// total is the number of replacements so far.
func (r *redactor) total() int {
	n := 0
	for _, c := range r.counts {
		n += c
	}
	return n
}

// logFields are the non-zero counts as key/value pairs in a stable order.
func (r *redactor) logFields() []any {
	kinds := make([]string, 0, len(r.counts))
	for k, c := range r.counts {
		if c > 0 {
			kinds = append(kinds, k)
		}
	}
	slices.Sort(kinds)
	out := make([]any, 0, 2*len(kinds))
	for _, k := range kinds {
		out = append(out, k, r.counts[k])
	}
	return out
}
