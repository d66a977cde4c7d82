package session

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/pith-dev/pith/core/tokens"
	"github.com/pith-dev/pith/internal/sessiongen"
	"github.com/pith-dev/pith/internal/testfixture"
)

// referenceBuilt is the built message as it was first written, one gjson
// search of the line for each field: the definition the one-walk build
// must match byte for byte.
func referenceBuilt(e *Entry) (Message, bool) {
	switch e.Type {
	case TypeCustomMessage:
		buf := []byte(`{"role":"custom"`)
		for _, k := range []string{"customType", "content", "display", "details"} {
			if v := e.Get(k); v.Exists() {
				buf = append(buf, ',')
				buf = append(buf, quote(k)...)
				buf = append(buf, ':')
				buf = append(buf, v.Raw...)
			}
		}
		if ts := e.Get("timestamp"); ts.Exists() {
			buf = append(buf, `,"timestamp":`...)
			buf = append(buf, ts.Raw...)
		}
		buf = append(buf, '}')
		return Message{Role: RoleCustom, Raw: buf, EntryID: e.ID}, true
	case TypeBranchSummary:
		return NewBranchSummary(e.Get("summary").String(), e.Get("fromId").String(), e.Timestamp(), e.ID), true
	}
	return Message{}, false
}

// checkBuilt compares an entry's built message, its estimate and what
// EntryMessage gives with the reference.
func checkBuilt(t *testing.T, e *Entry) {
	t.Helper()
	want, ok := referenceBuilt(e)
	if !ok {
		return
	}
	got := e.builtMessage()
	if got.msg.Role != want.Role || !bytes.Equal(got.msg.Raw, want.Raw) || got.msg.EntryID != want.EntryID {
		t.Fatalf("line %q:\nbuilt     %s\nreference %s", e.Raw, got.msg.Raw, want.Raw)
	}
	empty := e.Type == TypeBranchSummary && e.Get("summary").String() == ""
	m, ok := EntryMessage(e)
	if ok == empty || (ok && !bytes.Equal(m.Raw, want.Raw)) {
		t.Fatalf("line %q: EntryMessage %v %s", e.Raw, ok, m.Raw)
	}
	wantTokens := tokens.Estimate(want.Raw)
	if empty {
		wantTokens = 0
	}
	if n := e.EntryMessageTokens(); n != wantTokens {
		t.Fatalf("line %q: EntryMessageTokens %d, want %d", e.Raw, n, wantTokens)
	}
	if n := tokens.Estimate(want.Raw); empty && n != 0 {
		t.Fatalf("line %q: an empty branch summary estimates to %d", e.Raw, n)
	}
}

var builtLines = []string{
	`{"type":"custom_message","id":"a","customType":"note","content":"hi","display":true,"timestamp":"2025-01-01T00:00:00Z"}`,
	`{"type":"custom_message","id":"a","content":[{"type":"text","text":"x"},{"type":"image","data":"AA","mimeType":"image/png"}],"details":{"k":[1,2,{"z":null}]},"display":false}`,
	`{"timestamp":"t","details":null,"display":0,"content":"c","customType":"n","type":"custom_message","id":"a"}`,
	`{"type":"custom_message","id":"a","content":"first","content":"second","customType":"x","customType":"y"}`,
	`{"type":"custom_message","id":"a","cont\u0065nt":"escaped key","\u0063ustomType":"k"}`,
	` { "type" : "custom_message" , "id":"a" , "content" : [ 1 , 2 ] , "display" : true , "timestamp" : 1.5e3 } `,
	`{"type":"custom_message","id":"a","content":"\"quoted\" \\ \u00e9 \ud83d\ude00 <b>&","details":-0.25}`,
	`{"type":"custom_message","id":"a"}`,
	`{"type":"custom_message","id":"a","nested":{"content":"not top level"},"content":"top"}` + "\r",
	`{"type":"branch_summary","id":"b","parentId":"a","timestamp":"2025-01-01T00:00:00Z","fromId":"a","summary":"## Goal\n<x> & \u2028 \ud83d\ude00"}`,
	`{"type":"branch_summary","id":"b","summary":""}`,
	`{"type":"branch_summary","id":"b","summary":null,"fromId":7}`,
	`{"type":"branch_summary","id":"b"}`,
	`{"type":"branch_summary","id":"b","summary":12.50,"fromId":{"x":1},"timestamp":1700000000000}`,
	`{"type":"branch_summary","id":"b","summary":["a",{"b":"}"}],"timestamp":true}`,
	`{"type":"branch_summary","id":"b","summary":"one","summary":"two","s\u0075mmary":"three"}`,
	`{"type":"branch_summary","id":"b","summary":"bad \ud800 surrogate \udfff"}`,
	"{\"type\":\"branch_summary\",\"id\":\"b\",\"summary\":\"invalid \xff\xfe bytes\"}",
}

// TestBuiltMessageMatchesReference: the one-walk build gives the bytes the
// gjson searches gave, on tricky lines and on every pi fixture.
func TestBuiltMessageMatchesReference(t *testing.T) {
	for _, line := range builtLines {
		e, err := ParseEntry([]byte(line))
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		checkBuilt(t, e)
	}
	// Generated sessions have both types, escaped strings and odd
	// shapes; the pi fixtures may have neither.
	for seed := uint64(1); seed <= 3; seed++ {
		var buf bytes.Buffer
		if err := sessiongen.Generate(&buf, sessiongen.Defaults(seed, 5000)); err != nil {
			t.Fatal(err)
		}
		f, err := Parse(buf.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, e := range f.Entries {
			if e.Type == TypeCustomMessage || e.Type == TypeBranchSummary {
				checkBuilt(t, e)
				n++
			}
		}
		if n == 0 {
			t.Fatalf("seed %d: no custom_message or branch_summary generated", seed)
		}
	}
	files, _ := filepath.Glob(filepath.Join(testfixture.PiDir(), "*.jsonl"))
	if len(files) == 0 {
		testfixture.Missing(t, "pi fixtures not available (%s)", testfixture.PiDir())
	}
	built := 0
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := Parse(data)
		if err != nil {
			continue // not a session; its own tests say why
		}
		for _, e := range f.Entries {
			if e.Type == TypeCustomMessage || e.Type == TypeBranchSummary {
				checkBuilt(t, e)
				built++
			}
		}
	}
	t.Logf("%d built messages in %d fixtures", built, len(files))
}

// FuzzBuiltMessage compares the one-walk build with the gjson reference on
// any line that parses as an entry of the two types.
func FuzzBuiltMessage(f *testing.F) {
	for _, line := range builtLines {
		f.Add([]byte(line))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		e, err := ParseEntry(line)
		if err != nil {
			return
		}
		checkBuilt(t, e)
	})
}

// BenchmarkBuiltMessage measures building and estimating the messages of
// a generated session's custom_message and branch_summary entries, each
// from scratch (what preparing a compaction of a freshly opened session
// does once per entry), against the gjson searches it replaced.
func BenchmarkBuiltMessage(b *testing.B) {
	var buf bytes.Buffer
	if err := sessiongen.Generate(&buf, sessiongen.Benchmark(1, 20_000)); err != nil {
		b.Fatal(err)
	}
	f, err := Parse(buf.Bytes())
	if err != nil {
		b.Fatal(err)
	}
	var built []*Entry
	for _, e := range f.Entries {
		if e.Type == TypeCustomMessage || e.Type == TypeBranchSummary {
			built = append(built, e)
		}
	}
	b.Logf("%d entries", len(built))
	b.Run("one-walk", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, e := range built {
				e.built.Store(nil)
				e.EntryMessageTokens()
			}
		}
	})
	b.Run("gjson-reference", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, e := range built {
				m, _ := referenceBuilt(e)
				tokens.Estimate(m.Raw)
			}
		}
	})
}
