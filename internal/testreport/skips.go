package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

const module = "github.com/pith-dev/pith/"

// printSkips ends the report: how many tests were skipped, then one line
// each, package (relative to the module), test and reason.
func printSkips(w io.Writer, skips []skip) {
	if len(skips) == 0 {
		fmt.Fprintln(w, "\nskipped no tests")
		return
	}
	fmt.Fprintf(w, "\nskipped %d tests:\n", len(skips))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, s := range skips {
		pkg := strings.TrimPrefix(s.Package, module)
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", pkg, s.Test, s.Reason)
	}
	tw.Flush()
}
