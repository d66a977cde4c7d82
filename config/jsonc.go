package config

import (
	"bytes"
	"errors"
	"strings"

	"github.com/tailscale/hujson"
)

// blankJSONComments turns a .json configuration with // and /* */
// comments (as VS Code's settings carry) into plain JSON for the parser:
// every comment is overwritten with spaces, its newlines kept, so an
// error's line and column and the duplicate-key check see the file as
// written. Trailing commas are left in place and refused by the parser, as
// they always were: a configuration read by other JSON tools stays valid
// JSON once its comments are gone. A file hujson cannot read (a comment
// left open, a stray character) is a syntax error naming the line.
func blankJSONComments(data []byte) ([]byte, error) {
	if !bytes.Contains(data, []byte("/")) {
		return data, nil
	}
	// A copy: the parsed value aliases its input, which is blanked in
	// place, and the caller's bytes are the file as read (the watcher
	// hashes them). The newline added ends a // comment on the last line:
	// hujson ends one only at a newline.
	in := append(bytes.Clone(data), '\n')
	v, err := hujson.Parse(in)
	if err != nil {
		// "hujson: line 3, column 5: …": the library's name is no help
		// to the user; the position is.
		return nil, errors.New(strings.TrimPrefix(err.Error(), "hujson: "))
	}
	for value := range v.All() {
		blank(value.BeforeExtra)
		blank(value.AfterExtra)
		switch c := value.Value.(type) {
		case *hujson.Object:
			blank(c.AfterExtra)
		case *hujson.Array:
			blank(c.AfterExtra)
		}
	}
	out := v.Pack()
	return out[:len(out)-1], nil
}

// blank overwrites the comments in whitespace-and-comments bytes with
// spaces, keeping line breaks.
func blank(extra hujson.Extra) {
	for i, c := range extra {
		switch c {
		case ' ', '\t', '\r', '\n':
		default:
			extra[i] = ' '
		}
	}
}
