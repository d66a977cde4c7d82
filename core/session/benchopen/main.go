// Command benchopen times Pith's cold open of a session file: read, parse,
// index, build the context; it prints the best of N runs in milliseconds
// (used by scripts/bench-vs-pi.sh).
package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"time"

	"github.com/pith-dev/pith/core/session"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: benchopen FILE [RUNS]")
		os.Exit(2)
	}
	runs := 5
	if len(os.Args) > 2 {
		runs, _ = strconv.Atoi(os.Args[2])
	}
	best := time.Duration(1 << 62)
	for i := 0; i < runs; i++ {
		runtime.GC()
		start := time.Now()
		f, err := session.Load(os.Args[1])
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		ctx := session.NewTree(f.Entries).BuildContext(session.LeafDefault)
		if d := time.Since(start); d < best {
			best = d
		}
		if len(ctx.Messages) == 0 {
			fmt.Fprintln(os.Stderr, "empty context")
			os.Exit(1)
		}
	}
	fmt.Printf("%.1f\n", float64(best.Microseconds())/1000)
}
