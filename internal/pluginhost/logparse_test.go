package pluginhost

import (
	"bytes"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
)

func TestLogWriter(t *testing.T) {
	huge := strings.Repeat("x", maxLogLine*3)
	tests := []struct {
		name   string
		writes []string
		want   []string // substrings expected, in order, in the host log
		absent []string
	}{
		{
			name:   "hclog JSON line split like go-plugin writes it",
			writes: []string{`{"@level":"warn","@message":"disk low","@timestamp":"2026-01-01T00:00:00.000000Z","free":12}`, "\n"},
			want:   []string{`[WARN]  audit: disk low: free=12`},
		},
		{
			name:   "non-string @message",
			writes: []string{`{"@level":"info","@message":{"nested":[1,2]}}` + "\n", `{"@message":42,"@level":7}` + "\n", `{"@message":null}` + "\n"},
			want:   []string{`audit: {"nested":[1,2]}`, `[INFO]  audit: 42`},
		},
		{
			name:   "garbage and control characters",
			writes: []string{"\x00\xff\xfe not json {\x1b[31m\n", "{broken json\n", "[ERROR] classic line\n"},
			want:   []string{`audit: \x00`, `\x1b[31m`, `{broken json`, `[ERROR] audit: classic line`},
		},
		{
			name:   "huge line is truncated, next line intact",
			writes: []string{huge[:1000], huge[1000:], "\n", "after\n"},
			want:   []string{"truncated=true", "audit: after"},
		},
		{
			// The crash's report gives its first line (lastWords).
			name:   "runtime panic trace is logged at debug level",
			writes: []string{"panic: oh no\n\ngoroutine 1 [running]:\nmain.main()\n"},
			want:   []string{"[DEBUG] audit: panic: oh no", "[DEBUG] audit: goroutine 1 [running]:", "[DEBUG] audit: main.main()"},
		},
		{
			name:   "a JSON array or bare value is text",
			writes: []string{"[1,2,3]\n", "\"str\"\n"},
			want:   []string{"audit: [1,2,3]", `audit: "str"`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			log := hclog.New(&hclog.LoggerOptions{Output: &out, Level: hclog.Trace, DisableTime: true}).Named("audit")
			w := newLogWriter(log)
			for _, s := range tt.writes {
				if n, err := w.Write([]byte(s)); err != nil || n != len(s) {
					t.Fatalf("Write = %d, %v", n, err)
				}
			}
			w.Flush()
			got := out.String()
			rest := got
			for _, want := range tt.want {
				i := strings.Index(rest, want)
				if i < 0 {
					t.Fatalf("log lacks %q (in order); log:\n%s", want, got)
				}
				rest = rest[i+len(want):]
			}
			if len(got) > 2*maxLogLine {
				t.Fatalf("log of %d bytes: the huge line was not truncated", len(got))
			}
		})
	}
}

func FuzzLogWriter(f *testing.F) {
	f.Add([]byte(`{"@message":{"a":1},"@level":[]}` + "\n"))
	f.Add([]byte("\xff\n\n{"))
	f.Fuzz(func(t *testing.T, b []byte) {
		w := newLogWriter(hclog.NewNullLogger())
		_, _ = w.Write(b)
		w.Flush()
	})
}
