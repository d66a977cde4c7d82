// Command testreport runs `go test -json` and prints what `go test` would
// print — a line per package, and the whole output of a test that failed —
// then every skipped test with the reason it gave, so a skip is seen
// rather than lost in a passing run. It exits as go test exited.
//
//	testreport [-go GO] [go test flags and packages]
//
// `make test` runs the suite through it.
package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
)

func main() {
	goBin, args := "go", os.Args[1:]
	if len(args) >= 2 && args[0] == "-go" {
		goBin, args = args[1], args[2:]
	}
	cmd := exec.Command(goBin, append([]string{"test", "-json"}, args...)...)
	cmd.Stdin, cmd.Stderr = os.Stdin, os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, "testreport:", err)
		os.Exit(1)
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "testreport:", err)
		os.Exit(1)
	}
	skips := relay(stdout, os.Stdout)
	err = cmd.Wait()
	printSkips(os.Stdout, skips)
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		os.Exit(exit.ExitCode())
	case err != nil:
		fmt.Fprintln(os.Stderr, "testreport:", err)
		os.Exit(1)
	}
}
