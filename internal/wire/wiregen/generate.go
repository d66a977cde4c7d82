package wiregen

import (
	"google.golang.org/protobuf/compiler/protogen"
)

// The files written, relative to the output directory (the module root).
const (
	HooksFile = "hooks/events_gen.go"
	WireFile  = "internal/wire/convert_gen.go"
	SDKFile   = "sdk/types_gen.go"
)

// Generate writes the three files for the one file to generate that
// declares hook events; a request without one writes nothing.
func Generate(gen *protogen.Plugin) error {
	opts, err := newOptions(gen)
	if err != nil {
		return err
	}
	for _, f := range gen.Files {
		if !f.Generate {
			continue
		}
		c, err := newContract(f, opts)
		if err != nil {
			return err
		}
		if c == nil {
			continue
		}
		c.genHooks(gen.NewGeneratedFile(HooksFile, hooksPackage))
		c.genWire(gen.NewGeneratedFile(WireFile, "github.com/pith-dev/pith/internal/wire"))
		c.genSDK(gen.NewGeneratedFile(SDKFile, "github.com/pith-dev/pith/sdk"))
	}
	return nil
}
