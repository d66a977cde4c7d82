// Command writedemo writes the bundled demo session: go run ./internal/demo/writedemo FILE
package main

import (
	"fmt"
	"os"

	"github.com/pith-dev/pith/internal/demo"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: writedemo FILE")
		os.Exit(2)
	}
	os.Remove(os.Args[1])
	if err := demo.Write(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "writedemo:", err)
		os.Exit(1)
	}
}
