package redact

import (
	"net/url"
	"strings"
	"testing"
)

func TestURL(t *testing.T) {
	secretKey := func(name string) bool { return strings.Contains(name, "key") || name == "token" }
	tests := []struct {
		in     string
		secret func(string) bool
		want   string
	}{
		{"", nil, ""},
		{"https://s.example/v1", nil, "https://s.example/v1"},
		{"https://u:pw@s.example/v1", nil, "https://u:xxxxx@s.example/v1"},
		{"https://tok@s.example/v1", nil, "https://xxxxx@s.example/v1"},
		{"https://s.example/v1?api_key=abc&x=1", secretKey, "https://s.example/v1?api_key=xxxxx&x=1"},
		{"https://s.example/v1?model=m", secretKey, "https://s.example/v1?model=m"},
		// Without a notion of which names are secret, every value goes.
		{"https://s.example/v1?sig=abc&model=m", nil, "https://s.example/v1?model=xxxxx&sig=xxxxx"},
		{"https://s.example/v1#access_token=abc", secretKey, "https://s.example/v1"},
		{"http://[::1:bad", nil, "(unparsable URL)"},
	}
	for _, tt := range tests {
		if got := URL(tt.in, tt.secret); got != tt.want {
			t.Errorf("URL(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// FuzzURL: whatever the input, the result's user info, query values and
// fragment hold no credential (the host and path are not secrets).
func FuzzURL(f *testing.F) {
	f.Add("https://user:hunter2@h.example/p?token=hunter2#hunter2")
	f.Add("http://hunter2@h/?a=hunter2&a=hunter2")
	f.Add("//hunter2@h?%zz=hunter2")
	f.Fuzz(func(t *testing.T, raw string) {
		out := URL(raw, nil)
		if out == "(unparsable URL)" || out == "" {
			return
		}
		u, err := url.Parse(out)
		if err != nil {
			t.Fatalf("URL(%q) = %q, which does not parse: %v", raw, out, err)
		}
		if u.User != nil {
			if p, ok := u.User.Password(); (ok && p != Mask) || (!ok && u.User.Username() != Mask) {
				t.Fatalf("URL(%q) = %q keeps a credential in the user info", raw, out)
			}
		}
		for name, values := range u.Query() {
			for _, v := range values {
				if v != Mask {
					t.Fatalf("URL(%q) = %q keeps %s=%q", raw, out, name, v)
				}
			}
		}
		if u.Fragment != "" {
			t.Fatalf("URL(%q) = %q keeps the fragment", raw, out)
		}
	})
}
