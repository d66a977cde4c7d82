package sessiongen

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var idPattern = regexp.MustCompile(`^[0-9a-f]{8}$`)

type line struct {
	Type                string          `json:"type"`
	ID                  *string         `json:"id"`
	ParentID            *string         `json:"parentId"`
	Timestamp           string          `json:"timestamp"`
	Version             int             `json:"version"`
	FirstKeptEntryID    string          `json:"firstKeptEntryId"`
	FirstKeptEntryIndex *int            `json:"firstKeptEntryIndex"`
	TargetID            string          `json:"targetId"`
	FromID              string          `json:"fromId"`
	FromHook            bool            `json:"fromHook"`
	Message             json.RawMessage `json:"message"`
}

type stats struct {
	entries, compactions, hookCompactions, branchSummaries, abandoned int
	roles, types                                                      map[string]int
	escaped, images, errors, aborted, skipped                         int
}

// check validates a generated session the way a reader of pi's format
// relies on it, and returns what it saw. Lines that are not JSON objects are
// allowed only when opts asked for them.
func check(t *testing.T, data []byte, opts Options) stats {
	t.Helper()
	version := opts.Version
	if version == 0 {
		version = 3
	}
	st := stats{roles: map[string]int{}, types: map[string]int{}}
	lines := bytes.Split(data, []byte("\n"))
	if len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	} else if !opts.TornTail {
		t.Fatal("file does not end with a newline")
	}
	byID := map[string]line{}
	order := []string{}
	parsed := 0 // entries a pi-like loader keeps, header included
	for n, raw := range lines {
		var l line
		if err := json.Unmarshal(raw, &l); err != nil {
			torn := opts.TornTail && n == len(lines)-1
			if opts.Malformed == 0 && !torn {
				t.Fatalf("line %d is not JSON: %v", n, err)
			}
			st.skipped++
			continue
		}
		parsed++
		if parsed == 1 {
			want := version
			if version == 1 {
				want = 0 // v1 headers have no version field
			}
			if l.Type != "session" || l.Version != want {
				t.Fatalf("line %d is not a v%d header: %s", n, version, raw)
			}
			continue
		}
		st.entries++
		st.types[l.Type]++
		if version == 1 {
			if l.ID != nil || l.ParentID != nil {
				t.Fatalf("line %d: v1 entry with id/parentId", n)
			}
			if l.Type == "compaction" {
				st.compactions++
				if l.FirstKeptEntryIndex == nil || *l.FirstKeptEntryIndex < 1 || *l.FirstKeptEntryIndex >= parsed-1 {
					t.Fatalf("line %d: firstKeptEntryIndex %v does not name an earlier entry", n, l.FirstKeptEntryIndex)
				}
			}
		} else {
			if l.ID == nil || !idPattern.MatchString(*l.ID) {
				t.Fatalf("line %d: bad id in %.120s", n, raw)
			}
			if _, dup := byID[*l.ID]; dup {
				t.Fatalf("line %d: duplicate id %s", n, *l.ID)
			}
			if l.ParentID != nil {
				if _, ok := byID[*l.ParentID]; !ok {
					t.Fatalf("line %d: parent %s does not precede it", n, *l.ParentID)
				}
			} else if len(byID) > 0 {
				t.Fatalf("line %d: second root", n)
			}
			byID[*l.ID] = l
			order = append(order, *l.ID)
		}
		if l.Timestamp == "" {
			t.Fatalf("line %d: no timestamp", n)
		}
		if bytes.Contains(raw, []byte(`\u00`)) || bytes.Contains(raw, []byte(`\/`)) {
			st.escaped++
		}
		switch l.Type {
		case "compaction":
			if version == 1 {
				break
			}
			st.compactions++
			if l.FromHook {
				st.hookCompactions++
			}
			if !onPath(byID, *l.ID, l.FirstKeptEntryID) {
				t.Fatalf("line %d: firstKeptEntryId %s is not on the compaction's path", n, l.FirstKeptEntryID)
			}
		case "branch_summary":
			st.branchSummaries++
		case "label":
			if _, ok := byID[l.TargetID]; !ok {
				t.Fatalf("line %d: label target %s unknown", n, l.TargetID)
			}
		case "message":
			var m struct {
				Role       string `json:"role"`
				StopReason string `json:"stopReason"`
			}
			if err := json.Unmarshal(l.Message, &m); err != nil {
				t.Fatalf("line %d: message: %v", n, err)
			}
			st.roles[m.Role]++
			switch m.StopReason {
			case "error":
				st.errors++
			case "aborted":
				st.aborted++
			}
			if bytes.Contains(l.Message, []byte(`"type":"image"`)) {
				st.images++
			}
		}
	}
	// Entries not on the leaf's path belong to abandoned branches.
	if len(order) > 0 {
		on := map[string]bool{}
		for id := order[len(order)-1]; id != ""; {
			on[id] = true
			p := byID[id].ParentID
			if p == nil {
				break
			}
			id = *p
		}
		st.abandoned = len(order) - len(on)
	}
	return st
}

func onPath(byID map[string]line, from, target string) bool {
	for id := from; ; {
		if id == target {
			return true
		}
		p := byID[id].ParentID
		if p == nil {
			return false
		}
		id = *p
	}
}

func TestGenerate(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		want func(t *testing.T, st stats)
	}{
		{"tiny", Defaults(1, 1), func(t *testing.T, st stats) {}},
		{"defaults", Defaults(2, 3000), func(t *testing.T, st stats) {
			for _, role := range []string{"user", "assistant", "toolResult", "bashExecution", "custom"} {
				if st.roles[role] == 0 {
					t.Errorf("no %s messages", role)
				}
			}
			for _, typ := range []string{"model_change", "thinking_level_change", "label", "custom", "custom_message", "session_info"} {
				if st.types[typ] == 0 {
					t.Errorf("no %s entries", typ)
				}
			}
			if st.compactions == 0 || st.hookCompactions == 0 || st.branchSummaries == 0 {
				t.Errorf("compactions %d (hook %d), branch summaries %d", st.compactions, st.hookCompactions, st.branchSummaries)
			}
			if st.abandoned == 0 || st.escaped == 0 || st.images == 0 || st.errors == 0 || st.aborted == 0 {
				t.Errorf("abandoned %d escaped %d images %d errors %d aborted %d", st.abandoned, st.escaped, st.images, st.errors, st.aborted)
			}
		}},
		{"branchy", Branchy(3, 400), func(t *testing.T, st stats) {
			if st.abandoned == 0 || st.branchSummaries == 0 {
				t.Errorf("abandoned %d, branch summaries %d", st.abandoned, st.branchSummaries)
			}
		}},
		{"v2", func() Options {
			o := Defaults(5, 1500)
			o.Version = 2
			return o
		}(), func(t *testing.T, st stats) {
			if st.roles["hookMessage"] == 0 || st.roles["custom"] != 0 {
				t.Errorf("roles %v: want hookMessage and no custom", st.roles)
			}
		}},
		{"v1", func() Options {
			o := Defaults(6, 1500)
			o.Version = 1
			o.Compaction = 0.2
			return o
		}(), func(t *testing.T, st stats) {
			if st.compactions == 0 {
				t.Error("no compactions")
			}
			for typ := range st.types {
				switch typ {
				case "message", "compaction", "model_change", "thinking_level_change":
				default:
					t.Errorf("v1 file has a %s entry", typ)
				}
			}
		}},
		{"malformed", func() Options {
			o := Small(7, 400)
			o.Malformed = 0.05
			o.TornTail = true
			return o
		}(), func(t *testing.T, st stats) {
			if st.skipped < 2 {
				t.Errorf("only %d skipped lines", st.skipped)
			}
		}},
		{"linear", func() Options {
			o := Small(4, 300)
			o.Branch, o.Compaction = 0, 0
			return o
		}(), func(t *testing.T, st stats) {
			if st.abandoned != 0 || st.compactions != 0 {
				t.Errorf("abandoned %d, compactions %d", st.abandoned, st.compactions)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := Generate(&buf, tt.opts); err != nil {
				t.Fatal(err)
			}
			st := check(t, buf.Bytes(), tt.opts)
			if st.entries != tt.opts.Entries {
				t.Fatalf("got %d entries, want %d", st.entries, tt.opts.Entries)
			}
			tt.want(t, st)
		})
	}
}

func TestGenerateDeterministic(t *testing.T) {
	var a, b, c bytes.Buffer
	if err := Generate(&a, Defaults(9, 500)); err != nil {
		t.Fatal(err)
	}
	if err := Generate(&b, Defaults(9, 500)); err != nil {
		t.Fatal(err)
	}
	if err := Generate(&c, Defaults(10, 500)); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("same seed gave different output")
	}
	if bytes.Equal(a.Bytes(), c.Bytes()) {
		t.Fatal("different seeds gave the same output")
	}
}

func TestGenerateInvalidOptions(t *testing.T) {
	bad := []Options{
		{},
		func() Options { o := Defaults(1, 10); o.Branch = 2; return o }(),
		func() Options { o := Defaults(1, 10); o.ToolResultMax = 1; return o }(),
		func() Options { o := Defaults(1, 10); o.SplitTurnMin = 0; return o }(),
		func() Options { o := Defaults(1, 10); o.ProseMax = 0; return o }(),
		func() Options { o := Defaults(1, 10); o.Version = 4; return o }(),
		func() Options { o := Defaults(1, 10); o.Malformed = -1; return o }(),
	}
	for i, o := range bad {
		if err := Generate(io.Discard, o); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("case %d: got %v, want ErrInvalidOptions", i, err)
		}
	}
}

func TestGenerateFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	if err := GenerateFile(path, Small(5, 120)); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if st := check(t, data, Small(5, 120)); st.entries != 120 {
		t.Fatalf("got %d entries", st.entries)
	}
	if err := GenerateFile(filepath.Join(t.TempDir(), "missing", "s.jsonl"), Small(5, 1)); err == nil {
		t.Fatal("writing into a missing directory succeeded")
	}
}

func TestAppendString(t *testing.T) {
	tests := []struct {
		in    string
		style escStyle
		want  string
	}{
		{"plain", escJS, `"plain"`},
		{"a\"b\\c\n\r\t\b\f\x01\x1f\x7f", escJS, `"a\"b\\c\n\r\t\b\f\u0001\u001f` + "\x7f\""},
		{"é😀<>&/", escJS, `"é😀<>&/"`},
		{"é😀<>&/", escASCII, `"\u00e9\ud83d\ude00\u003c\u003e\u0026\/"`},
		{"日本\u2028", escASCII, `"\u65e5\u672c\u2028"`},
	}
	for _, tt := range tests {
		got := string(appendString(nil, tt.in, tt.style))
		if got != tt.want {
			t.Errorf("appendString(%q, %d) = %s, want %s", tt.in, tt.style, got, tt.want)
		}
		var back string
		if err := json.Unmarshal([]byte(got), &back); err != nil || back != tt.in {
			t.Errorf("%s decodes to %q (%v), want %q", got, back, err, tt.in)
		}
	}
}

func TestOddArgumentsPresent(t *testing.T) {
	var buf bytes.Buffer
	if err := Generate(&buf, Defaults(11, 2000)); err != nil {
		t.Fatal(err)
	}
	s := buf.String()
	for _, want := range []string{`"zeta":1.0`, `[1e2,-0.5,3,`, `"10":"ten"`, `"name":"grep"`, `"path":42`} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %s", want)
		}
	}
}

// BenchmarkGenerate100k measures the benchmark-corpus case: a 100 000-entry
// session of about 100 MB streamed to a discarding writer.
func BenchmarkGenerate100k(b *testing.B) {
	cw := &countWriter{}
	for b.Loop() {
		cw.n = 0
		if err := Generate(cw, Benchmark(1, 100_000)); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(cw.n)
	b.ReportMetric(float64(cw.n)/1e6, "MB/session")
}

type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return len(p), nil
}
