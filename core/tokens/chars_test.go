package tokens_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/core/tokens"
	"github.com/pith-dev/pith/internal/sessiongen"
	"github.com/pith-dev/pith/internal/testfixture"
)

// TestCharsMatchesReference compares the one-pass Chars with the generic
// gjson reading it replaced, and each entry's cached estimate with
// Estimate, on every message of the pi fixtures (skipped when absent) and
// of generated sessions of every profile, read with and without the
// estimates measured in the scan (escapes, astral characters,
// odd tool-call arguments, branches, compactions).
func TestCharsMatchesReference(t *testing.T) {
	check := func(t *testing.T, name string, data []byte) {
		f, err := session.Parse(data)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, e := range f.Entries {
			m, ok := session.EntryMessage(e)
			if !ok {
				continue
			}
			if got, want := tokens.Chars(m.Raw), tokens.CharsReference(m.Raw); got != want {
				t.Errorf("%s line %d (%s): Chars %d, reference %d", name, e.Line, m.Role, got, want)
			}
			if e.Type == session.TypeMessage {
				if got, want := e.MessageTokens(), tokens.Estimate(m.Raw); got != want {
					t.Errorf("%s line %d: MessageTokens %d, Estimate %d", name, e.Line, got, want)
				}
			}
		}
		// The estimates measured while the lines are scanned.
		measured, err := session.ParseWith(data, session.ParseOptions{Estimates: true})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, e := range measured.Entries {
			if raw := e.MessageRaw(); raw != nil {
				if got, want := e.MessageTokens(), tokens.Estimate(raw); got != want {
					t.Errorf("%s line %d: measured MessageTokens %d, Estimate %d", name, e.Line, got, want)
				}
			}
		}
	}
	t.Run("fixtures", func(t *testing.T) {
		files, _ := filepath.Glob(filepath.Join(fixtureDir, "*.jsonl"))
		if len(files) == 0 {
			testfixture.Missing(t, "no pi fixtures at %s", fixtureDir)
		}
		for _, p := range files {
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			check(t, filepath.Base(p), data)
		}
	})
	t.Run("generated", func(t *testing.T) {
		for _, profile := range []string{"small", "default", "benchmark", "branchy"} {
			for seed := uint64(1); seed <= 3; seed++ {
				opts, err := sessiongen.Profile(profile, seed, 400)
				if err != nil {
					t.Fatal(err)
				}
				var buf bytes.Buffer
				if err := sessiongen.Generate(&buf, opts); err != nil {
					t.Fatal(err)
				}
				check(t, profile, buf.Bytes())
			}
		}
	})
}

// TestCharsOddShapes covers what generators do not write: escaped keys
// and type names, duplicate keys (the first counts), content given as an
// object, blocks that are not objects, and broken JSON (no panic).
func TestCharsOddShapes(t *testing.T) {
	for _, raw := range []string{
		`{"role":"user","content":"h\u00e9llo \ud83d\ude00"}`,
		`{"r\u006fle":"user","content":"abc"}`,
		`{"role":"us\u0065r","content":[{"t\u0079pe":"te\u0078t","text":"abc"}]}`,
		`{"role":"user","content":"first","content":"second!"}`,
		`{"role":"assistant","content":[{"type":"text","text":"a","text":"bbbb"}]}`,
		`{"role":"assistant","content":{"x":{"type":"text","text":"abc"},"y":{"type":"thinking","thinking":"de"}}}`,
		`{"role":"assistant","content":[1,null,true,[{"type":"text","text":"zz"}],{"type":"toolCall","name":"read","arguments":{"path":"a\/b","n":1.0}}]}`,
		`{"role":"toolResult","content":[{"type":"image","data":"xx"},{"type":"text","text":"\\\"\n"}]}`,
		`{"role":"bashExecution","command":"ls","output":"a\tb","command":"x"}`,
		`{"role":"compactionSummary","summary":"s"}`,
		`{"role":"custom","content":[{"type":"text","text":"é"}]}`,
		` { "role" : "user" , "content" : [ { "type" : "text" , "text" : "spaced" } ] } `,
		`{"role":"user","content":[{"type":"image","data":"xx"},{"type":"text","text":"t"}]}`,
		`[]`, ``, `{`, `"str"`,
	} {
		if got, want := tokens.Chars([]byte(raw)), tokens.CharsReference([]byte(raw)); got != want {
			t.Errorf("%s: Chars %d, reference %d", raw, got, want)
		}
	}
	// Broken JSON never reaches Chars from a file (lines are validated
	// when read); it must still end without a panic.
	for _, raw := range []string{
		`{"role":"user","content":"unterminated`,
		`{"role":"assistant","content":[{"type":"toolCall","name":"x","arguments":`,
		`{"role":"user","content":"trailing backslash\`,
		`{"role":"assistant","content":[{"type":"text","text":"a"},{"type":"text","text":"b`,
	} {
		tokens.Chars([]byte(raw))
	}
}

// FuzzChars: any input, valid or not, gives a count without a panic or an
// out-of-bounds read. (Agreement with the reference is not fuzzed: on a
// block that is a string the gjson reading searches inside the string.)
func FuzzChars(f *testing.F) {
	f.Add([]byte(`{"role":"assistant","content":[{"type":"toolCall","name":"read","arguments":{"path":"a"}}]}`))
	f.Add([]byte(`{"role":"user","content":"h\u00e9llo"}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		n := tokens.Chars(raw)
		if n < 0 {
			t.Fatalf("negative count %d", n)
		}
	})
}
