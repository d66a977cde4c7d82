package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"sync"

	kjson "github.com/knadh/koanf/parsers/json"
	"github.com/knadh/koanf/parsers/toml/v2"
	"github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/providers/env/v2"
	"github.com/knadh/koanf/v2"
	gotoml "github.com/pelletier/go-toml/v2"
)

// EnvPrefix starts every environment override.
const EnvPrefix = "PITH_"

var (
	// ErrUnsupportedFormat is returned for a file whose extension is not
	// .yaml, .yml, .toml, .json or .jsonc.
	ErrUnsupportedFormat = errors.New("unsupported configuration format")
	// ErrSyntax wraps a file that does not parse. It is an ErrInvalid too.
	ErrSyntax = fmt.Errorf("%w: syntax error", ErrInvalid)
	// ErrEmpty refuses, on a reload, a file that sets no key (empty,
	// blank or only comments): what a save truncating the file first
	// leaves for a moment, and a copy cut short leaves for good. Read as
	// a configuration it would be every default.
	ErrEmpty = errors.New("the configuration file sets no key (empty, or read in the middle of a save)")
)

// Format is a configuration file format.
type Format string

// Supported formats.
const (
	FormatYAML Format = "yaml"
	FormatTOML Format = "toml"
	FormatJSON Format = "json"
)

// FormatOf picks the format from the file name's extension.
func FormatOf(path string) (Format, error) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".yaml", ".yml":
		return FormatYAML, nil
	case ".toml":
		return FormatTOML, nil
	case ".json", ".jsonc":
		return FormatJSON, nil
	}
	return "", fmt.Errorf("%s: %w (want .yaml, .yml, .toml or .json)", path, ErrUnsupportedFormat)
}

func (f Format) parser() koanf.Parser {
	switch f {
	case FormatTOML:
		return toml.Parser()
	case FormatJSON:
		return kjson.Parser()
	}
	return yaml.Parser()
}

// Option adjusts how a configuration is loaded.
type Option func(*loadOptions)

type loadOptions struct {
	environ func() []string
	noEnv   bool
	// setsKeys refuses a file that sets no key (ErrEmpty); the Watcher's
	// reloads use it.
	setsKeys bool
}

// requireKeys is the Watcher's option: a reloaded file must set a key.
func requireKeys(o *loadOptions) { o.setsKeys = true }

// WithEnviron takes the environment from fn instead of the process (for
// tests, and for callers that hold a prepared environment).
func WithEnviron(fn func() []string) Option {
	return func(o *loadOptions) { o.environ = fn }
}

// WithoutEnv ignores PITH_ environment overrides: the result is the file
// on top of the defaults, nothing else.
func WithoutEnv() Option {
	return func(o *loadOptions) { o.noEnv = true }
}

// Load reads the configuration: the defaults, then the file at path (when
// path is not empty; its format by extension), then PITH_ environment
// overrides. The result is validated as a whole; a *ValidationError lists
// every problem. The returned *Config is a fresh snapshot.
func Load(path string, opts ...Option) (*Config, error) {
	if path == "" {
		return Parse(nil, "", opts...)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read configuration: %w", notFound(err))
	}
	return Parse(data, path, opts...)
}

// Parse is Load for content already read from path. path gives the format
// and the directory that relative plugin paths are resolved against; with
// an empty path, data is ignored and only defaults and environment apply.
func Parse(data []byte, path string, opts ...Option) (*Config, error) {
	k, problems, err := parseKeys(data, path, opts)
	if err != nil {
		return nil, err
	}
	cfg := Defaults()
	d := decoder{}
	d.decode(k.Raw(), reflect.ValueOf(cfg).Elem(), "")
	problems = append(d.problems, problems...)
	resolvePaths(cfg, path)
	if err := cfg.Validate(); err != nil {
		var verr *ValidationError
		if errors.As(err, &verr) {
			problems = append(problems, verr.Problems...)
		}
	}
	if len(problems) > 0 {
		return nil, &ValidationError{Source: path, Problems: problems}
	}
	return cfg, nil
}

// parseKeys reads data (of path's format) and the PITH_ environment into
// a fresh koanf instance: a reload must never see keys of an earlier load.
// The problems are those of the environment overrides.
func parseKeys(data []byte, path string, opts []Option) (*koanf.Koanf, []Problem, error) {
	var o loadOptions
	for _, opt := range opts {
		opt(&o)
	}
	k := koanf.New(".")
	if path != "" {
		format, err := FormatOf(path)
		if err != nil {
			return nil, nil, err
		}
		if format == FormatJSON {
			var err error
			if data, err = blankJSONComments(data); err != nil {
				return nil, nil, fmt.Errorf("%s: %w: %w", path, ErrSyntax, err)
			}
			// encoding/json keeps the last of two equal keys without a
			// word; YAML and TOML parsers refuse them.
			if dups := jsonDuplicateKeys(data); len(dups) > 0 {
				return nil, nil, &ValidationError{Source: path, Problems: dups}
			}
		}
		if len(bytes.TrimSpace(data)) > 0 {
			if err := k.Load(bytesProvider(data), format.parser()); err != nil {
				if format == FormatYAML {
					err = yamlErrorLine(data, err)
				}
				return nil, nil, fmt.Errorf("%s: %w: %w", path, ErrSyntax, withPosition(data, err))
			}
		}
		if o.setsKeys && len(k.Keys()) == 0 {
			return nil, nil, fmt.Errorf("%s: %w", path, ErrEmpty)
		}
	}
	var problems []Problem
	if !o.noEnv {
		t := envTransform{}
		p := env.Provider(".", env.Opt{Prefix: EnvPrefix, TransformFunc: t.transform, EnvironFunc: o.environ})
		if err := k.Load(p, nil); err != nil {
			return nil, nil, fmt.Errorf("read %s environment overrides: %w", EnvPrefix, err)
		}
		problems = append(problems, t.problems...)
	}
	return k, problems, nil
}

// withPosition adds the line and column to parse errors that do not name
// them: encoding/json's carry a byte offset, go-toml's a separate position.
// YAML errors name the line already.
func withPosition(data []byte, err error) error {
	var (
		jerr *json.SyntaxError
		terr *gotoml.DecodeError
	)
	switch {
	case errors.As(err, &jerr):
		before := data[:min(int(jerr.Offset), len(data))]
		line := bytes.Count(before, []byte("\n")) + 1
		col := len(before) - bytes.LastIndexByte(before, '\n')
		return fmt.Errorf("line %d column %d: %w", line, col, err)
	case errors.As(err, &terr):
		line, col := terr.Position()
		return fmt.Errorf("line %d column %d: %w", line, col, err)
	}
	return err
}

// yamlLineLimit bounds yamlErrorLine's search: it parses each prefix of
// the file, which is cheap for a configuration and only done on error.
const yamlLineLimit = 5000

var yamlLinePrefix = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^yaml: line \d+: `) })

// yamlErrorLine corrects the line of a YAML syntax error. The YAML library
// names the line where the enclosing block or flow starts, and for parser
// errors counts it from 0: a tab in line 3's indentation is reported at
// line 2, a missing key at the line above. The first line that makes the
// document unparseable is found by parsing ever longer prefixes of it.
func yamlErrorLine(data []byte, err error) error {
	msg := err.Error()
	if !yamlLinePrefix().MatchString(msg) {
		return err
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	if len(lines) > yamlLineLimit {
		return err
	}
	p := yaml.Parser()
	end := 0
	for i, l := range lines {
		end += len(l)
		if _, perr := p.Unmarshal(data[:end]); perr != nil {
			return fmt.Errorf("line %d: %s", i+1, yamlLinePrefix().ReplaceAllString(msg, ""))
		}
	}
	return err
}

// bytesProvider hands already-read bytes to koanf, so that the content that
// is hashed by the watcher is exactly the content that is parsed.
type bytesProvider []byte

func (b bytesProvider) ReadBytes() ([]byte, error) { return b, nil }

func (b bytesProvider) Read() (map[string]any, error) {
	return nil, errors.New("bytes provider needs a parser")
}

// envTransform maps PITH_ variables onto keys (see the package doc) and
// collects the variables that look meant for the configuration but do not
// name a key.
type envTransform struct {
	problems []Problem
	seen     map[string]string // key → the variable that set it
}

func (t *envTransform) transform(name, value string) (string, any) {
	key, problem := resolveEnvKey(name)
	if problem != "" {
		t.problems = append(t.problems, Problem{Key: name, Reason: problem})
	}
	if key == "" {
		return "", nil
	}
	if other, dup := t.seen[key]; dup {
		// Two spellings of one key: which wins would depend on the order
		// of the environment.
		t.problems = append(t.problems, Problem{Key: name, Reason: fmt.Sprintf("sets %s, which %s sets too", key, other)})
		return "", nil
	}
	if t.seen == nil {
		t.seen = map[string]string{}
	}
	t.seen[key] = name
	return key, value
}

// resolveEnvKey returns the dotted key a PITH_ variable sets, "" to ignore
// it, and a problem when it looks like a mistyped override.
func resolveEnvKey(name string) (key, problem string) {
	segs := strings.Split(strings.TrimPrefix(name, EnvPrefix), "__")
	t := reflect.TypeFor[Config]()
	var path []string
	for i, seg := range segs {
		f, ok := lookupNormalized(t, seg)
		if !ok {
			if i > 0 {
				return "", fmt.Sprintf("%s has no key %q", strings.Join(path, "."), seg)
			}
			for _, top := range fieldsOf(t) {
				if strings.HasPrefix(normalizeKey(seg), normalizeKey(top.key)) {
					return "", fmt.Sprintf("separate levels with a double underscore, as in %s%s__...", EnvPrefix, strings.ToUpper(top.key))
				}
			}
			return "", "" // not a configuration variable
		}
		path = append(path, f.key)
		ft := t.Field(f.index).Type
		last := i == len(segs)-1
		switch {
		case ft.Kind() == reflect.Struct && ft != durationType:
			if last {
				return "", fmt.Sprintf("%s is a section; name one of its keys", strings.Join(path, "."))
			}
			t = ft
			continue
		case ft.Kind() == reflect.Map || ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
			return "", fmt.Sprintf("%s cannot be set from the environment; use the configuration file", strings.Join(path, "."))
		case !last:
			return "", fmt.Sprintf("%s is a value, not a section", strings.Join(path, "."))
		}
	}
	return strings.Join(path, "."), ""
}

func lookupNormalized(t reflect.Type, seg string) (field, bool) {
	norm := normalizeKey(seg)
	for _, f := range fieldsOf(t) {
		if normalizeKey(f.key) == norm {
			return f, true
		}
	}
	return field{}, false
}

// jsonDuplicateKeys finds keys repeated within one JSON object. Malformed
// input yields nothing: the parser reports it properly afterwards.
func jsonDuplicateKeys(data []byte) []Problem {
	type frame struct {
		isObject  bool
		path      string
		keys      map[string]bool
		expectKey bool   // objects: the next string is a key
		key       string // objects: the key whose value comes next
		index     int    // arrays: the index of the next element
	}
	// childPath names the value about to start in f.
	childPath := func(f *frame) string {
		if f.isObject {
			return joinKey(f.path, f.key)
		}
		return fmt.Sprintf("%s[%d]", f.path, f.index)
	}
	// valueDone moves f past one value.
	valueDone := func(f *frame) {
		if f.isObject {
			f.expectKey = true
		} else {
			f.index++
		}
	}
	var (
		problems []Problem
		stack    []*frame
	)
	dec := json.NewDecoder(bytes.NewReader(data))
	for {
		tok, err := dec.Token()
		if err != nil {
			return problems // io.EOF, or a syntax error left to the parser
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				path := ""
				if top != nil {
					path = childPath(top)
				}
				stack = append(stack, &frame{isObject: t == '{', path: path, keys: map[string]bool{}, expectKey: true})
			default:
				stack = stack[:len(stack)-1]
				if len(stack) > 0 {
					valueDone(stack[len(stack)-1])
				}
			}
		case string:
			if top != nil && top.isObject && top.expectKey {
				if top.keys[t] {
					problems = append(problems, Problem{Key: joinKey(top.path, t), Reason: "duplicate key; one of the two would be silently ignored"})
				}
				top.keys[t], top.key, top.expectKey = true, t, false
				continue
			}
			if top != nil {
				valueDone(top)
			}
		default:
			if top != nil {
				valueDone(top)
			}
		}
	}
}
