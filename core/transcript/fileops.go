package transcript

import (
	"bytes"
	"slices"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/pith-dev/pith/core/session"
	"github.com/tidwall/gjson"
)

// FileOps collects the files the summarized part touched (docs/behaviour.md §5.8).
type FileOps struct {
	Read    map[string]bool
	Written map[string]bool
	Edited  map[string]bool
}

// NewFileOps returns empty sets.
func NewFileOps() *FileOps {
	return &FileOps{Read: map[string]bool{}, Written: map[string]bool{}, Edited: map[string]bool{}}
}

// AddDetails adds the lists a previous compaction or branch summary stored
// in its details: readFiles as read, modifiedFiles as edited.
func (f *FileOps) AddDetails(details gjson.Result) {
	details.Get("readFiles").ForEach(func(_, v gjson.Result) bool {
		if v.Type == gjson.String && v.Str != "" {
			f.Read[v.Str] = true
		}
		return true
	})
	details.Get("modifiedFiles").ForEach(func(_, v gjson.Result) bool {
		if v.Type == gjson.String && v.Str != "" {
			f.Edited[v.Str] = true
		}
		return true
	})
}

// toolCallMarker is a cheap pre-filter: a message without it has no tool
// call to look for.
var toolCallMarker = []byte(`"toolCall"`)

// AddMessage adds the read, write and edit tool calls of an assistant
// message whose arguments carry a non-empty string path. Other tools (bash,
// grep, …) touch files too, but their arguments do not say which reliably.
func (f *FileOps) AddMessage(m session.Message) {
	if m.Role != session.RoleAssistant {
		return
	}
	if m.ToolPathsKnown {
		for _, tp := range m.ToolPaths {
			f.add(tp.Name, tp.Path)
		}
		return
	}
	if !bytes.Contains(m.Raw, toolCallMarker) {
		return
	}
	session.ObjectFields(m.Raw, func(key string, content []byte) bool {
		if key != "content" {
			return true
		}
		session.ArrayElements(content, f.addBlock)
		return false
	})
}

// addBlock records a read, write or edit tool call with a string path.
func (f *FileOps) addBlock(block []byte) bool {
	var typ, name string
	var args []byte
	session.ObjectFields(block, func(key string, v []byte) bool {
		switch key {
		case "type":
			typ, _ = session.StringValue(v)
		case "name":
			name, _ = session.StringValue(v)
		case "arguments":
			args = v
		}
		return true
	})
	if typ != "toolCall" || args == nil {
		return true
	}
	var path string
	session.ObjectFields(args, func(key string, v []byte) bool {
		if key == "path" {
			path, _ = session.StringValue(v) // the last one wins, as in JSON.parse
		}
		return true
	})
	if path != "" {
		f.add(name, path)
	}
	return true
}

func (f *FileOps) add(tool, path string) {
	switch tool {
	case "read":
		f.Read[path] = true
	case "write":
		f.Written[path] = true
	case "edit":
		f.Edited[path] = true
	}
}

// Lists returns the files only read and the files modified (edited or
// written), each sorted the way JavaScript sorts strings (by UTF-16 code
// units), so lists match the reference's byte for byte.
func (f *FileOps) Lists() (readFiles, modifiedFiles []string) {
	modified := map[string]bool{}
	for p := range f.Edited {
		modified[p] = true
	}
	for p := range f.Written {
		modified[p] = true
	}
	for p := range f.Read {
		if !modified[p] {
			readFiles = append(readFiles, p)
		}
	}
	for p := range modified {
		modifiedFiles = append(modifiedFiles, p)
	}
	slices.SortFunc(readFiles, compareUTF16)
	slices.SortFunc(modifiedFiles, compareUTF16)
	return readFiles, modifiedFiles
}

// compareUTF16 orders strings by UTF-16 code units. It equals byte order
// except between characters U+E000–U+FFFF and astral ones, which UTF-16
// puts the other way round.
func compareUTF16(a, b string) int {
	for a != "" && b != "" {
		ra, na := utf8.DecodeRuneInString(a)
		rb, nb := utf8.DecodeRuneInString(b)
		if ra != rb {
			ua, ub := firstUnit(ra), firstUnit(rb)
			if ua != ub {
				if ua < ub {
					return -1
				}
				return 1
			}
			// Same high surrogate: the low surrogates order like the runes.
			if ra < rb {
				return -1
			}
			return 1
		}
		a, b = a[na:], b[nb:]
	}
	return len(a) - len(b)
}

func firstUnit(r rune) rune {
	if r >= 0x10000 {
		hi, _ := utf16.EncodeRune(r)
		return hi
	}
	return r
}

// FormatFileOperations renders the file lists appended to a summary:
// "\n\n" then <read-files> and <modified-files> blocks, or "" when both
// lists are empty.
func FormatFileOperations(readFiles, modifiedFiles []string) string {
	var sections []string
	if len(readFiles) > 0 {
		sections = append(sections, "<read-files>\n"+strings.Join(readFiles, "\n")+"\n</read-files>")
	}
	if len(modifiedFiles) > 0 {
		sections = append(sections, "<modified-files>\n"+strings.Join(modifiedFiles, "\n")+"\n</modified-files>")
	}
	if len(sections) == 0 {
		return ""
	}
	return "\n\n" + strings.Join(sections, "\n\n")
}
