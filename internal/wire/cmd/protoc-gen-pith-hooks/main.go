// Command protoc-gen-pith-hooks is the protoc plugin that generates the Go
// plugin contract from hooks.proto (see package wiregen); make proto runs
// it.
package main

import (
	"github.com/pith-dev/pith/internal/wire/wiregen"
	"google.golang.org/protobuf/compiler/protogen"
)

func main() {
	protogen.Options{}.Run(wiregen.Generate)
}
