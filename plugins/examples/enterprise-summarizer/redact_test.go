package main

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestRedactText(t *testing.T) {
	tests := []struct {
		name, in, want string
		kind           string
	}{
		{name: "openai key", in: "export OPENAI_API_KEY=sk-proj-AbCdEf0123456789xyzXYZ", want: "export OPENAI_API_KEY=[REDACTED:api-key]", kind: "api-key"},
		{name: "anthropic key", in: `key: "sk-ant-api03-abcdefghijklmnop_QRS"`, want: `key: "[REDACTED:api-key]"`, kind: "api-key"},
		{name: "aws", in: "aws_access_key_id = AKIAIOSFODNN7EXAMPLE\n", want: "aws_access_key_id = [REDACTED:aws-access-key]\n", kind: "aws-access-key"},
		{name: "github", in: "token ghp_0123456789abcdefghijABCDEFGHIJ0123 used", want: "token [REDACTED:github-token] used", kind: "github-token"},
		{name: "github fine-grained", in: "github_pat_11ABCDEFG0123456789_abcdefghijklmnop", want: "[REDACTED:github-token]", kind: "github-token"},
		{name: "slack", in: "xoxb-123456789012-abcdefABCDEF", want: "[REDACTED:slack-token]", kind: "slack-token"},
		{name: "bearer", in: "Authorization: Bearer abc.DEF-123_456~789/xyz==", want: "Authorization: Bearer [REDACTED:bearer-token]", kind: "bearer-token"},
		{name: "jwt", in: "jwt=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U ok", want: "jwt=[REDACTED:jwt] ok", kind: "jwt"},
		{name: "private key", in: "key:\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\nAAAA\n-----END OPENSSH PRIVATE KEY-----\ndone", want: "key:\n[REDACTED:private-key]\ndone", kind: "private-key"},
		{name: "truncated private key", in: "-----BEGIN RSA PRIVATE KEY-----\nMIIEow", want: "[REDACTED:private-key]", kind: "private-key"},
		{name: "url password", in: "psql postgres://admin:s3cr3t!@db.internal:5432/app", want: "psql postgres://admin:[REDACTED:password]@db.internal:5432/app", kind: "url-password"},
		{name: "email", in: "ask jane.doe+pith@example.co.uk today", want: "ask [REDACTED:email] today", kind: "email"},
		{name: "nothing secret", in: "sk-short and the skeleton key, AKIA, ghp_ and user@localhost", want: "sk-short and the skeleton key, AKIA, ghp_ and user@localhost"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newRedactor()
			got := r.text(tc.in)
			if got != tc.want {
				t.Fatalf("got  %q\nwant %q", got, tc.want)
			}
			if tc.kind == "" {
				if r.total() != 0 {
					t.Fatalf("counted %v, want nothing", r.counts)
				}
				return
			}
			if r.counts[tc.kind] != 1 || r.total() != 1 {
				t.Fatalf("counts %v, want one %s", r.counts, tc.kind)
			}
		})
	}
}

func TestRedactJSON(t *testing.T) {
	r := newRedactor()
	in := json.RawMessage(`{"role":"toolResult","sk-keysarenotredacted0000":1,"n":12345678901234567890,"content":[{"type":"text","text":"token=sk-abcdefghijklmnopqrstu and ops@example.com"}],"details":{"env":["AKIAIOSFODNN7EXAMPLE"]}}`)
	out, err := r.json(in)
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	for _, leak := range []string{"sk-abcdefghijklmnopqrstu", "ops@example.com", "AKIAIOSFODNN7EXAMPLE"} {
		if strings.Contains(s, leak) {
			t.Errorf("%q survived: %s", leak, s)
		}
	}
	if !strings.Contains(s, "12345678901234567890") || !strings.Contains(s, "sk-keysarenotredacted0000") {
		t.Errorf("numbers and keys must be kept: %s", s)
	}
	if got := r.logFields(); len(got) != 6 || got[0] != "api-key" || got[2] != "aws-access-key" || got[4] != "email" {
		t.Errorf("log fields %v", got)
	}
	if _, err := r.json(json.RawMessage(`{"broken`)); err == nil {
		t.Error("malformed JSON must be an error")
	}
}

// FuzzMayMatch checks the prefilters: a rule's regexp never matches a
// string its mayMatch turned away, so skipping it changes nothing.
func FuzzMayMatch(f *testing.F) {
	for _, s := range []string{
		"Authorization: BEARER abcdefghijklmnop", "bEaReR\tabcdefghijklmnopq", "sk-abcdefghijklmnopqrs",
		"ASIAABCDEFGHIJKLMNOP", "gho_abcdefghijklmnopqrstuvwxyz0123456", "xoxp-1234567890", "a://u:p@h",
		"x@y.zz", "-----BEGIN EC PRIVATE KEY-----", "eyJabcde.eyJabcde.abcdefgh",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, ru := range rules {
			if !ru.mayMatch(s) && ru.re.MatchString(s) {
				t.Fatalf("rule %s: mayMatch turned away %q, which its regexp matches", ru.kind, s)
			}
		}
	})
}

// BenchmarkRedactDemoSession redacts every message of the bundled demo
// session, as BeforeCompact does with the messages to summarize.
func BenchmarkRedactDemoSession(b *testing.B) {
	msgs := demoMessages(b)
	b.ReportAllocs()
	for b.Loop() {
		r := newRedactor()
		for _, m := range msgs {
			if _, err := r.message(m); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// TestMayHoldSecret pins the rule for passing a message on undecoded: a
// literal anywhere in the raw bytes, or an escape standing for a byte of a
// literal, sends it the full way.
func TestMayHoldSecret(t *testing.T) {
	tests := []struct {
		raw  string
		want bool
	}{
		{`{"role":"user","content":"plain words, <b> & \"quotes\"\n\ttabs"}`, false},
		{`{"role":"user","content":"colour \u001b[31m, \u00e9, \ud83d\ude00, \u003c"}`, false},
		{`{"role":"user","content":"through the_night"}`, false},            // "gh" and "_" apart: no github token
		{`{"role":"user","content":"x\\u0040y.zz"}`, false},                 // an escaped backslash, then the text u0040
		{`{"role":"user","content":"ask a@b.cc"}`, true},                    // a literal in the raw bytes
		{`{"role":"user","content":"\u0073k-abcdefghijklmnopqrstu"}`, true}, // \u0073 is s
		{`{"role":"user","content":"https:\/\/u:p@h.io"}`, true},            // \/ is /
		{`{"role":"user","content":"a\u002eb"}`, true},                      // \u002e is .
		{`{"role":"user","content":"ok"} trailing`, false},                  // however read, it holds no secret; the prompt builder reads or rejects it as the full path does
		{`{"role":"user","content":"cut`, false},
	}
	for _, tc := range tests {
		if got := mayHoldSecret([]byte(tc.raw)); got != tc.want {
			t.Errorf("mayHoldSecret(%s) = %v, want %v", tc.raw, got, tc.want)
		}
	}
}
