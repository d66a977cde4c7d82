package session

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/pith-dev/pith/core/jsondepth"
)

// FuzzScanOracle checks the session scanner's verdict on one line against
// jsontext. The scanner reads pi's files as JSON.parse does, so jsontext
// runs with pi's leniency: duplicate names allowed (the last one counts),
// invalid UTF-8 and lone surrogates allowed (the raw line is kept).
//
//   - a line jsontext reads as one object, with a type other than
//     "session", is an entry: ParseEntry accepts it, Parse keeps it, and
//     its type, id, parentId, message (role too) and every member agree
//     with jsontext's reading of the line;
//   - any other line is not an entry: ParseEntry refuses it and Parse
//     skips it with a warning on its line, keeping its bytes.
//
// Lines that bytes.TrimSpace empties (Unicode spaces count) are blank to
// Parse, skipped without a warning by design, and left out here.
func FuzzScanOracle(f *testing.F) {
	addOracleSeeds(f)
	for _, s := range []string{
		`{"type":"message","id":"a1","parentId":null,"message":{"role":"user","content":"hi"}}`,
		`{"type":"message","message":{"role":"user"},"message":5}`,
		`{"type":"message","message":5,"message":{"role":"assistant","provider":"p","model":"m"}}`,
		`{"typ\u0065":"custom","id":"\u0061b","parentId":"\ud800"}`,
		`{"type":"x","type":1}`, `{"type":1,"type":"x"}`, `{"type":"session","id":"s"}`, `{"type":"x","type":"session"}`,
		`{"type":"x"} `, `{"type":"x"`, `{"type":"x",}`, `[1,2]`, `"str"`, `{}`, `{"type":"x"}{}`, "\u00a0{}", "{}\u00a0",
		"{\"type\":\"x\",\"s\":\"a\tb\"}", `{"type":"x","n":01}`, `{"type":"x","s":"\x"}`, `{"type":"x","n":1.}`, `{"type":"x","n":-}`,
		"{\"type\":\"x\",\"s\":\"\xff\"}", "{\"id\":\"\xea\"}", `{"Id":"0"}`, `{"type":"x","a":[1,]}`, `{"type":"x","a":[,1]}`,
		`{"type":"x","d":` + strings.Repeat("[", jsondepth.Max-1) + strings.Repeat("]", jsondepth.Max-1) + `}`,
		`{"type":"x","d":` + strings.Repeat("[", jsondepth.Max) + strings.Repeat("]", jsondepth.Max) + `}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		if bytes.IndexByte(line, '\n') >= 0 || len(bytes.TrimSpace(line)) == 0 {
			return // one line at a time; blank lines are not lines
		}
		ms, refErr := jsontextMembers(line, jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
		typ, _ := stringMember(ms, "type")
		isEntry := refErr == nil && typ != TypeSession

		e, err := ParseEntry(line)
		// In a file: after a current header (no migration), ended by "\n"
		// only (a "\r" before it stays part of the line, kept byte for byte).
		file, perr := Parse([]byte("{\"type\":\"session\",\"version\":3,\"id\":\"s\"}\n" + string(line) + "\n"))
		if perr != nil {
			t.Fatalf("the file does not parse: %v", perr)
		}
		inFile := string(line)
		if !isEntry {
			if err == nil {
				t.Fatalf("ParseEntry accepted a line jsontext does not read as an entry (%v): %q", refErr, line)
			}
			if len(file.Entries) != 0 || len(file.Warnings) != 1 || file.Warnings[0].Line != 2 || string(file.Skipped[2]) != inFile {
				t.Fatalf("not one warning on line 2 with the line kept: entries %d, warnings %v: %q", len(file.Entries), file.Warnings, line)
			}
			return
		}
		if err != nil {
			t.Fatalf("ParseEntry refused (%v) a line jsontext reads: %q", err, line)
		}
		if len(file.Entries) != 1 || len(file.Warnings) != 0 || file.Entries[0].Line != 2 || string(file.Entries[0].Raw) != inFile {
			t.Fatalf("Parse: entries %d, warnings %v: %q", len(file.Entries), file.Warnings, line)
		}
		if !bytes.Equal(e.Raw, line) {
			t.Fatal("Raw is not the line")
		}
		valid := utf8.Valid(line) // else Go decoders replace bytes differently; the raw line is what is kept
		if e.Type != typ && valid {
			t.Fatalf("type %q, jsontext %q: %q", e.Type, typ, line)
		}
		for _, k := range []struct {
			name string
			got  string
		}{{"id", e.ID}, {"parentId", e.ParentID}} {
			want, _ := stringMember(ms, k.name)
			if k.got != want && valid {
				t.Fatalf("%s %q, jsontext %q: %q", k.name, k.got, want, line)
			}
		}
		msg := memberValue(ms, "message")
		if e.Type == TypeMessage && msg.Kind() == '{' {
			if !bytes.Equal(e.MessageRaw(), msg) {
				t.Fatalf("message %q, jsontext %q", e.MessageRaw(), msg)
			}
			fields, ferr := jsontextMembers(msg, jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
			if ferr != nil {
				t.Fatalf("jsontext cannot read the message it read: %v", ferr)
			}
			if role, _ := stringMember(fields, "role"); valid && e.Role() != role {
				t.Fatalf("role %q, jsontext %q: %q", e.Role(), role, line)
			}
		} else if e.MessageRaw() != nil {
			t.Fatalf("a message %q where jsontext has none: %q", e.MessageRaw(), line)
		}
		// Every member, as the fast walk over Raw reads it.
		i := 0
		ObjectFields(e.Raw, func(k string, v []byte) bool {
			switch {
			case i >= len(ms):
				t.Fatalf("member %d %q past jsontext's %d: %q", i, k, len(ms), line)
			case !bytes.Equal(v, ms[i].value) || (valid && k != ms[i].name):
				t.Fatalf("member %d is %q:%s, jsontext %q:%s", i, k, v, ms[i].name, ms[i].value)
			}
			i++
			return true
		})
		if i != len(ms) {
			t.Fatalf("%d members walked, jsontext has %d: %q", i, len(ms), line)
		}
	})
}

// addOracleSeeds seeds an oracle target with every line of the scanner's
// fuzz corpus and short lines of the generated sessions.
func addOracleSeeds(f *testing.F) {
	corpus, _ := filepath.Glob("testdata/fuzz/FuzzParseLine/*")
	for _, name := range corpus {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		for _, l := range strings.Split(string(b), "\n") {
			if q, ok := strings.CutPrefix(l, "[]byte("); ok {
				if s, err := strconv.Unquote(strings.TrimSuffix(q, ")")); err == nil {
					f.Add([]byte(s))
				}
			}
		}
	}
	sessions, _ := filepath.Glob("testdata/golden/generated/*.jsonl")
	for _, name := range sessions {
		fh, err := os.Open(name)
		if err != nil {
			f.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(nil, 1<<20)
		for n := 0; sc.Scan() && n < 8; {
			if len(sc.Bytes()) < 2048 {
				f.Add(bytes.Clone(sc.Bytes()))
				n++
			}
		}
		fh.Close()
	}
}
