// Command benchopen times Pith on a session file for scripts/bench-vs-pi.sh:
// "open" is the cold open (read, parse, index, build the context); "prepare"
// is compaction.Prepare on the path of an opened session; "context" and
// "dryrun" are what pith context and pith compact --dry-run do (a mapped
// read; the dry run measures the estimates in the parse and calibrates). It prints the best
// of N runs in milliseconds.
package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"time"

	"github.com/pith-dev/pith/core/compaction"
	"github.com/pith-dev/pith/core/session"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: benchopen open|prepare FILE [RUNS]")
		os.Exit(2)
	}
	mode, path := os.Args[1], os.Args[2]
	runs := 5
	if len(os.Args) > 3 {
		runs, _ = strconv.Atoi(os.Args[3])
	}
	var op func() error
	switch mode {
	case "open":
		op = func() error {
			f, err := session.Load(path)
			if err != nil {
				return err
			}
			if ctx := session.NewTree(f.Entries).BuildContext(session.LeafDefault); len(ctx.Messages) == 0 {
				return fmt.Errorf("empty context")
			}
			return nil
		}
	case "prepare":
		f, err := session.Load(path)
		if err != nil {
			fail(err)
		}
		tree := session.NewTree(f.Entries)
		p := tree.Path(tree.Last())
		settings := compaction.DefaultSettings()
		settings.CalibrateKeepRecent = false // as pi, which does not calibrate
		op = func() error {
			_, err := compaction.Prepare(p, settings)
			return err
		}
	case "context":
		// As pith context reads a session: mapped.
		op = func() error {
			f, err := session.LoadWith(path, session.LoadOptions{Mapped: true})
			if err != nil {
				return err
			}
			if ctx := session.NewTree(f.Entries).BuildContext(session.LeafDefault); len(ctx.Messages) == 0 {
				return fmt.Errorf("empty context")
			}
			return nil
		}
	case "dryrun":
		// As pith compact --dry-run: mapped, the estimates measured in
		// the parse, and a calibrated preparation.
		op = func() error {
			f, err := session.LoadWith(path, session.LoadOptions{Mapped: true, ParseOptions: session.ParseOptions{Estimates: true}})
			if err != nil {
				return err
			}
			tree := session.NewTree(f.Entries)
			_, err = compaction.Prepare(tree.Path(tree.Last()), compaction.DefaultSettings())
			return err
		}
	default:
		fail(fmt.Errorf("unknown mode %q", mode))
	}
	// BENCHOPEN_CPUPROFILE names a file for a CPU profile of the runs.
	if out := os.Getenv("BENCHOPEN_CPUPROFILE"); out != "" {
		pf, err := os.Create(out)
		if err != nil {
			fail(err)
		}
		if err := pprof.StartCPUProfile(pf); err != nil {
			fail(err)
		}
		defer pprof.StopCPUProfile()
	}
	best := time.Duration(1 << 62)
	for i := 0; i < runs; i++ {
		runtime.GC()
		start := time.Now()
		if err := op(); err != nil {
			fail(err)
		}
		best = min(best, time.Since(start))
	}
	fmt.Printf("%.2f\n", float64(best.Microseconds())/1000)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "benchopen:", err)
	os.Exit(1)
}
