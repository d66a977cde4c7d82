package config

import (
	"errors"
	"strings"
	"testing"
)

func TestBlankJSONComments(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"a": 1} // end`, `{"a": 1}       `},
		{"{\n// line\n\"a\": 1}", "{\n       \n\"a\": 1}"},
		{`{"u": "http://x//y", "s": "/* no */"}`, `{"u": "http://x//y", "s": "/* no */"}`},
		{`{"e": "quote \" // still string"}`, `{"e": "quote \" // still string"}`},
		{"{/* a\nb */\"a\": 1}", "{    \n    \"a\": 1}"},
		{`{"a" /* name */ : [1 /* one */, 2] /* end */}`, `{"a"            : [1          , 2]          }`},
		// A trailing comma stays, for the parser to refuse as before.
		{"{\"a\": 1, // one\n}", "{\"a\": 1,       \n}"},
		{`{"plain": "json"}`, `{"plain": "json"}`},
	}
	for _, tc := range tests {
		in := []byte(tc.in)
		got, err := blankJSONComments(in)
		if err != nil || string(got) != tc.want {
			t.Errorf("blankJSONComments(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
		if string(in) != tc.in {
			t.Errorf("blankJSONComments changed its input %q to %q", tc.in, in)
		}
	}
}

// TestJSONCommentErrors: what the comment handling refuses, and what the
// parser refuses after it, is a syntax error naming the line.
func TestJSONCommentErrors(t *testing.T) {
	for name, tc := range map[string]struct{ content, want string }{
		"unterminated comment": {"{\n  \"contextWindow\": 1000\n} /* open", "line 3"},
		"trailing comma":       {"{\n  // a comment\n  \"contextWindow\": 1000,\n}", "line 4"},
		"missing comma":        {"{\n  \"contextWindow\": 1000 // c\n  \"logging\": {}\n}", "line 3"},
	} {
		t.Run(name, func(t *testing.T) {
			path := writeFile(t, t.TempDir(), "pith.json", tc.content)
			_, err := Load(path, noEnv)
			if !errors.Is(err, ErrSyntax) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "hujson") {
				t.Fatalf("want a syntax error at %s, got %v", tc.want, err)
			}
		})
	}
	// Comments and a duplicate key: the duplicate is found in the
	// commented file as in a plain one.
	path := writeFile(t, t.TempDir(), "pith.jsonc", "{\n  // one\n  \"contextWindow\": 1000,\n  /* two */ \"contextWindow\": 2000\n}")
	_, err := Load(path, noEnv)
	if ps := problemsOf(t, err); !hasProblem(ps, "contextWindow", "duplicate key") {
		t.Errorf("duplicate key not reported: %v", ps)
	}
}
