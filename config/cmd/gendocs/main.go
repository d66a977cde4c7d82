// Command gendocs writes docs/config.md, the configuration reference, from
// the Config struct (the schema: its koanf tags are the keys), the defaults
// config.Defaults gives, and the comments of config/examples/pith.yaml (one
// per key). Run it from the repository root:
//
//	go run ./config/cmd/gendocs > docs/config.md
//
// Its test fails when docs/config.md is not what it would write.
package main

import (
	"flag"
	"fmt"
	"os"
)

func main() {
	example := flag.String("example", "config/examples/pith.yaml", "the commented example configuration")
	flag.Parse()
	data, err := os.ReadFile(*example)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gendocs:", err)
		os.Exit(1)
	}
	doc, err := render(data)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gendocs:", err)
		os.Exit(1)
	}
	os.Stdout.Write(doc)
}
