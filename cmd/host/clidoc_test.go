package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// The flags section of docs/cli.md is every command's --help, between
// these markers; TestCLIReferenceIsCurrent writes it when PITH_UPDATE_DOCS=1.
const (
	cliDoc        = "../../docs/cli.md"
	flagsBegin    = "<!-- Generated from each command's --help: PITH_UPDATE_DOCS=1 go test ./cmd/host -run TestCLIReferenceIsCurrent -->\n"
	flagsEnd      = "<!-- End of the generated flags. -->\n"
	updateDocsEnv = "PITH_UPDATE_DOCS"
)

// commandPaths lists every runnable command below root, as its words
// after "pith", in the order help lists them (cobra's own completion and
// help commands left out).
func commandPaths(c *cobra.Command, prefix []string) [][]string {
	var out [][]string
	for _, sub := range c.Commands() {
		if sub.Hidden || sub.Name() == "help" || sub.Name() == "completion" {
			continue
		}
		path := append(append([]string{}, prefix...), sub.Name())
		if sub.Runnable() {
			out = append(out, path)
		}
		out = append(out, commandPaths(sub, path)...)
	}
	return out
}

// renderFlags is the generated part of docs/cli.md.
func renderFlags(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	for _, path := range commandPaths(newRootCommand(), nil) {
		stdout, stderr, code := runCLI(t, append(path, "--help")...)
		if code != 0 {
			t.Fatalf("pith %s --help: exit %d: %s", strings.Join(path, " "), code, stderr)
		}
		help := stdout[strings.Index(stdout, "Usage:"):]
		if i := strings.Index(help, "\nUse \"pith"); i >= 0 {
			help = help[:i+1]
		}
		b.WriteString("### pith " + strings.Join(path, " ") + "\n\n```text\n" + strings.TrimRight(help, "\n") + "\n```\n\n")
	}
	return b.String()
}

// TestCLIReferenceIsCurrent keeps docs/cli.md's flags what the commands
// print, so a flag added, renamed or reworded shows up in the guide.
func TestCLIReferenceIsCurrent(t *testing.T) {
	doc, err := os.ReadFile(cliDoc)
	if err != nil {
		t.Fatal(err)
	}
	i, j := bytes.Index(doc, []byte(flagsBegin)), bytes.Index(doc, []byte(flagsEnd))
	if i < 0 || j < i {
		t.Fatalf("%s lacks the markers of its generated flags section", cliDoc)
	}
	want := "\n" + renderFlags(t)
	if got := string(doc[i+len(flagsBegin) : j]); got == want {
		return
	}
	if os.Getenv(updateDocsEnv) == "1" {
		next := append(append(append([]byte{}, doc[:i+len(flagsBegin)]...), want...), doc[j:]...)
		if err := os.WriteFile(cliDoc, next, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Fatalf("docs/cli.md's flags are stale: run %s=1 go test ./cmd/host -run TestCLIReferenceIsCurrent", updateDocsEnv)
}
