package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
)

// rule is one kind of secret: what matches it and how a match is replaced.
// A replacement keeps the non-secret part of a match (the "Bearer " word,
// the user name of a URL) so the summary still reads naturally.
type rule struct {
	kind    string
	re      *regexp.Regexp
	replace string
	// need is what every match contains, as literals: one literal of each
	// group (see prefilter.go). Most strings of a conversation hold no
	// secret, and skipping the regexp for them makes redaction several
	// times cheaper without changing what it replaces.
	need [][]string
	// fold: the literals are lower-case ASCII words found in any letter
	// case, for a (?i) rule.
	fold bool
}

// rules are applied in order. Order matters: a private key block can hold
// anything, and a URL's "user:password@host" would otherwise be half-eaten
// by the e-mail rule.
var rules = []rule{
	{kind: "private-key", re: regexp.MustCompile(`-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|$)`), replace: "[REDACTED:private-key]", need: [][]string{{"PRIVATE KEY-----"}}},
	{kind: "jwt", re: regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{8,}`), replace: "[REDACTED:jwt]", need: [][]string{{"eyJ"}, {"."}}},
	// None of the letters of "bearer" has a non-ASCII case fold (as k has
	// K, the Kelvin sign), so an ASCII fold finds every (?i) match.
	{kind: "bearer-token", re: regexp.MustCompile(`(?i)\b(bearer\s+)[A-Za-z0-9\-._~+/]{12,}=*`), replace: "${1}[REDACTED:bearer-token]", need: [][]string{{"bearer"}}, fold: true},
	{kind: "api-key", re: regexp.MustCompile(`\bsk-[A-Za-z0-9_-]{16,}`), replace: "[REDACTED:api-key]", need: [][]string{{"sk-"}}},
	{kind: "aws-access-key", re: regexp.MustCompile(`\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`), replace: "[REDACTED:aws-access-key]", need: [][]string{{"AKIA", "ASIA"}}},
	{kind: "github-token", re: regexp.MustCompile(`\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})`), replace: "[REDACTED:github-token]", need: [][]string{{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"}}},
	{kind: "slack-token", re: regexp.MustCompile(`\bxox[abposr]-[A-Za-z0-9-]{10,}`), replace: "[REDACTED:slack-token]", need: [][]string{{"xox"}}},
	{kind: "url-password", re: regexp.MustCompile(`\b([A-Za-z][A-Za-z0-9+.-]*://[^\s:/@]+:)[^\s@/]+@`), replace: "${1}[REDACTED:password]@", need: [][]string{{"://"}, {"@"}}},
	{kind: "email", re: regexp.MustCompile(`\b[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b`), replace: "[REDACTED:email]", need: [][]string{{"@"}, {"."}}},
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

// message returns the message with every string value redacted. A message
// that cannot hold a match of any rule (mayHoldSecret) comes back as it
// is, undecoded; any other is decoded, redacted and re-encoded (json).
func (r *redactor) message(raw json.RawMessage) (json.RawMessage, error) {
	if !mayHoldSecret(raw) {
		return raw, nil
	}
	return r.json(raw)
}

// json returns the message with every string value redacted (keys are
// left alone: they are field names, not data), re-encoded: keys sorted,
// no spaces, <, > and & escaped. Numbers keep their exact text.
func (r *redactor) json(raw json.RawMessage) (json.RawMessage, error) {
	v, err := decodeAny(raw)
	if err != nil {
		return nil, fmt.Errorf("decode message: %w", err)
	}
	out, err := json.Marshal(r.walk(v))
	if err != nil {
		return nil, fmt.Errorf("encode redacted message: %w", err)
	}
	return out, nil
}

// decodeAny decodes the first JSON value of raw, numbers as json.Number so
// that they keep their text.
func decodeAny(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
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
