package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action     string
	Package    string
	Test       string
	Output     string
	ImportPath string // build-output events name the package this way
}

// skip is a skipped test and the reason its output gave.
type skip struct {
	Package, Test, Reason string
}

// relay reads the event stream, writes the output `go test` would write
// without -v, and returns the skipped tests in the order they ended.
func relay(r io.Reader, w io.Writer) []skip {
	type key struct{ pkg, test string }
	pending := map[key][]string{} // a running test's output, shown only if it fails
	var skips []skip
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if err := json.Unmarshal(line, &e); err != nil {
			// Not an event (a line go test printed itself): pass it on.
			fmt.Fprintf(w, "%s\n", line)
			continue
		}
		k := key{e.Package, e.Test}
		switch {
		case e.Action == "build-output":
			io.WriteString(w, e.Output)
		case e.Action == "output" && e.Test == "":
			if e.Output != "PASS\n" && !progress(e.Output) {
				io.WriteString(w, e.Output)
			}
		case e.Action == "output":
			pending[k] = append(pending[k], e.Output)
		case e.Action == "fail" && e.Test != "":
			for _, out := range pending[k] {
				if !progress(out) {
					io.WriteString(w, out)
				}
			}
			delete(pending, k)
		case e.Action == "skip" && e.Test != "":
			skips = append(skips, skip{e.Package, e.Test, reason(pending[k])})
			delete(pending, k)
		case e.Action == "pass" && e.Test != "":
			delete(pending, k)
		}
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintf(w, "testreport: reading go test's output: %v\n", err)
		io.Copy(io.Discard, r)
	}
	return skips
}

// progress reports the lines -json adds that a run without -v does not
// print: a test starting, pausing and going on.
func progress(out string) bool {
	for _, p := range []string{"=== RUN", "=== PAUSE", "=== CONT", "=== NAME"} {
		if strings.HasPrefix(out, p) {
			return true
		}
	}
	return false
}

// reason is what a skipped test said: its output other than the framing
// lines, "file_test.go:12: " and indentation cut, joined on one line.
func reason(output []string) string {
	var parts []string
	for _, out := range output {
		line := strings.TrimSpace(out)
		if line == "" || progress(line) || strings.HasPrefix(line, "--- SKIP") {
			continue
		}
		if file, rest, ok := strings.Cut(line, ": "); ok && strings.Contains(file, ".go:") && !strings.Contains(file, " ") {
			line = rest
		}
		parts = append(parts, line)
	}
	if len(parts) == 0 {
		return "(no reason given)"
	}
	return strings.Join(parts, " ")
}
