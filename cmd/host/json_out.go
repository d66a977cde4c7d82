package main

import (
	"encoding/json"
	"io"
)

// writeJSON prints v as one line of JSON, as every --json does: control
// characters escaped by JSON itself, no HTML escaping of <, > and &.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// importJSON is pith import --json (docs/cli.md).
type importJSON struct {
	File  string `json:"file"`  // the file read
	Name  string `json:"name"`  // the session it is stored as
	Bytes int    `json:"bytes"` // its size, stored byte for byte
}

// exportJSON is pith export --out FILE --json (docs/cli.md).
type exportJSON struct {
	Name  string `json:"name"`  // the stored session
	Out   string `json:"out"`   // the file written
	Bytes int    `json:"bytes"` // its size, the session byte for byte
}
