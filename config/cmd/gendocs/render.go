package main

import (
	"bytes"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/pith-dev/pith/config"
)

// key is one row of the reference.
type key struct {
	path, typ, def, meaning string
}

var durationType = reflect.TypeFor[time.Duration]()

// entryDefaults are the defaults of one entry of each list of entries: a
// plugin entry left out of a file takes the plugin defaults, which only a
// parsed entry shows (config keeps them unexported).
func entryDefaults() (map[string]reflect.Value, error) {
	c, err := config.Parse([]byte("plugins: [{name: p, path: /bin/sh}]\n"), "defaults.yaml", config.WithoutEnv())
	if err != nil {
		return nil, err
	}
	return map[string]reflect.Value{"plugins": reflect.ValueOf(c.Plugins[0])}, nil
}

// walk lists the leaf keys of v (a struct) under prefix, in the order of
// the struct's fields.
func walk(v reflect.Value, prefix string, entries map[string]reflect.Value, out *[]key) {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		name := f.Tag.Get("koanf")
		if name == "" || name == "-" || !f.IsExported() {
			continue
		}
		path := name
		if prefix != "" {
			path = prefix + "." + name
		}
		fv := v.Field(i)
		switch {
		case f.Type.Kind() == reflect.Struct:
			walk(fv, path, entries, out)
		case f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() == reflect.Struct:
			*out = append(*out, key{path: path, typ: "list of entries", def: "`[]`"})
			elem, ok := entries[path]
			if !ok {
				elem = reflect.New(f.Type.Elem()).Elem()
			}
			walk(elem, path+"[]", entries, out)
		default:
			*out = append(*out, key{path: path, typ: typeName(f.Type), def: defaultOf(fv)})
		}
	}
}

func typeName(t reflect.Type) string {
	switch {
	case t == durationType:
		return "duration"
	case t.Kind() == reflect.Slice:
		return "list of " + typeName(t.Elem()) + "s"
	case t.Kind() == reflect.Map:
		return "map of " + typeName(t.Elem()) + "s"
	}
	return t.Kind().String()
}

func defaultOf(v reflect.Value) string {
	switch {
	case v.Type() == durationType:
		return "`" + duration(time.Duration(v.Int())) + "`"
	case v.Kind() == reflect.String:
		if v.String() == "" {
			return `""`
		}
		return "`" + v.String() + "`"
	case v.Kind() == reflect.Slice:
		items := make([]string, v.Len())
		for i := range items {
			items[i] = fmt.Sprint(v.Index(i).Interface())
		}
		return "`[" + strings.Join(items, ", ") + "]`"
	case v.Kind() == reflect.Map:
		if v.Len() == 0 {
			return "`{}`"
		}
		keys := make([]string, 0, v.Len())
		for _, k := range v.MapKeys() {
			keys = append(keys, fmt.Sprintf("%v: %v", k, v.MapIndex(k)))
		}
		sort.Strings(keys)
		return "`{" + strings.Join(keys, ", ") + "}`"
	}
	return "`" + fmt.Sprint(v.Interface()) + "`"
}

// duration writes d as a configuration file would: 2m, not 2m0s.
func duration(d time.Duration) string {
	switch {
	case d == 0:
		return "0s"
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	case d%time.Second == 0:
		return fmt.Sprintf("%ds", d/time.Second)
	}
	return d.String()
}

// keys lists every key of the configuration with its type, default and
// meaning.
func keys(example []byte) ([]key, error) {
	entries, err := entryDefaults()
	if err != nil {
		return nil, err
	}
	var out []key
	walk(reflect.ValueOf(*config.Defaults()), "", entries, &out)
	comments := exampleComments(example)
	for i := range out {
		out[i].meaning = comments[out[i].path]
		if m, ok := rephrased[out[i].path]; ok {
			out[i].meaning = m
		}
		if out[i].meaning == "" {
			out[i].meaning = missing[out[i].path]
		}
		if required[out[i].path] {
			out[i].def = "(required)"
		}
	}
	return out, nil
}

// missing says what the keys do that the example file sets without a
// comment of their own.
var missing = map[string]string{
	"pruning.enabled":                       "false: never prune tool outputs automatically",
	"retry.enabled":                         "false: one attempt per summarizer call",
	"sessions.root":                         "the directory the daemon keeps its sessions in (~ is expanded; a relative path is relative to the file's directory)",
	"logging.level":                         "trace | debug | info | warn | error | off",
	"server.tokens[].name":                  "the caller's name in logs and per-caller limits",
	"server.tokens[].sha256":                "the token's SHA-256, as `pith serve hash-token` prints it (write it last in the entry)",
	"server.tokens[].prefix":                "the sessions the token may touch (\"\" for all)",
	"summarizer.candidates[].provider":      "as summarizer.provider, for this fallback model",
	"summarizer.candidates[].model":         "as summarizer.model",
	"summarizer.candidates[].baseUrl":       "as summarizer.baseUrl",
	"summarizer.candidates[].apiKeyEnv":     "as summarizer.apiKeyEnv",
	"plugins[].limits.preserveDataBytes":    "the preserveData a plugin returns (JSON)",
	"plugins[].limits.detailsBytes":         "the details a plugin returns (JSON)",
	"plugins[].limits.stderrBytesPerSecond": "stderr bytes relayed to the log a second; the excess is counted and dropped",
	"plugins[].limits.stderrLineBytes":      "a stderr line is cut at this length",
}

// rephrased replaces an example comment that reads well above a key but
// not in a table.
var rephrased = map[string]string{
	"plugins[].args": "command-line arguments the plugin is started with, as written, except that one starting ./, ../ or ~/ (or a --name=value whose value does) is resolved as path is",
	"plugins":        "out-of-process plugins (go-plugin), each an entry with the keys below",
}

// required are the keys an entry must set (entryDefaults had to set them).
var required = map[string]bool{"plugins[].name": true, "plugins[].path": true}

func render(example []byte) ([]byte, error) {
	ks, err := keys(example)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString(preamble)
	section := ""
	for _, k := range ks {
		top, _, _ := strings.Cut(k.path, ".")
		top = strings.TrimSuffix(top, "[]")
		if top != section {
			section = top
			fmt.Fprintf(&b, "\n## %s\n\n| key | type | default | meaning |\n|---|---|---|---|\n", section)
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", k.path, k.typ, cell(k.def), cell(k.meaning))
	}
	return b.Bytes(), nil
}

// cell escapes what would end a table cell.
func cell(s string) string {
	return strings.ReplaceAll(s, "|", `\|`)
}
