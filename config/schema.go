package config

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/pith-dev/pith/internal/credential"
	"github.com/pith-dev/pith/internal/redact"
)

// The Config struct is the schema: its koanf tags are the key names. The
// functions here walk it by reflection to decode a parsed map onto it with
// precise messages (unknown keys, wrong types), to turn it back into a map
// for display, and to flatten it for diffs.

var durationType = reflect.TypeFor[time.Duration]()

// field is one key of a configuration struct.
type field struct {
	key   string // the koanf tag
	index int
	hint  string // the pith tag: url, args, envmap
}

func fieldsOf(t reflect.Type) []field {
	out := make([]field, 0, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		key := f.Tag.Get("koanf")
		if key == "" || key == "-" || !f.IsExported() {
			continue
		}
		out = append(out, field{key: key, index: i, hint: f.Tag.Get("pith")})
	}
	return out
}

// normalizeKey folds the differences people make when typing a key: case,
// and the separators of snake_case and kebab-case.
func normalizeKey(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		if r == '_' || r == '-' {
			continue
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

// lookupField finds the field for key exactly; on a miss it returns the
// key the user probably meant: one that folds to the same spelling, else
// the closest within two edits.
func lookupField(t reflect.Type, key string) (f field, ok bool, suggestion string) {
	fields := fieldsOf(t)
	for _, f := range fields {
		if f.key == key {
			return f, true, ""
		}
	}
	norm := normalizeKey(key)
	best := 3
	for _, f := range fields {
		d := editDistance(norm, normalizeKey(f.key))
		if d < best {
			best, suggestion = d, f.key
		}
	}
	return field{}, false, suggestion
}

// editDistance is the Levenshtein distance between two short keys.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// elementDefault gives the starting value of a list element, so that keys
// an entry leaves out take their defaults.
func elementDefault(t reflect.Type) reflect.Value {
	v := reflect.New(t).Elem()
	if t == reflect.TypeFor[Plugin]() {
		v.Set(reflect.ValueOf(defaultPlugin()))
	}
	return v
}

// decoder decodes a parsed configuration map onto a typed value, collecting
// every problem instead of stopping at the first.
type decoder struct {
	problems []Problem
}

func (d *decoder) addf(key, format string, args ...any) {
	d.problems = append(d.problems, Problem{Key: key, Reason: fmt.Sprintf(format, args...)})
}

// decodeScalar sets a scalar through set when conv takes raw, else reports
// what the key must be.
func decodeScalar[T any](d *decoder, raw any, path, want string, conv func(any) (T, bool), set func(T)) {
	x, ok := conv(raw)
	if !ok {
		d.addf(path, "must be %s, got %s", want, describe(raw))
		return
	}
	set(x)
}

// decode sets v from raw. v keeps its value (a default) when raw is nil or
// cannot be decoded.
func (d *decoder) decode(raw any, v reflect.Value, path string) {
	if raw == nil {
		return
	}
	t := v.Type()
	switch {
	case t == durationType:
		d.decodeDuration(raw, v, path)
	case t.Kind() == reflect.Struct:
		d.decodeStruct(raw, v, path)
	case t.Kind() == reflect.Slice:
		d.decodeSlice(raw, v, path)
	case t.Kind() == reflect.Map:
		d.decodeMap(raw, v, path)
	case t.Kind() == reflect.String:
		decodeScalar(d, raw, path, "a string", scalarString, v.SetString)
	case t.Kind() == reflect.Int:
		decodeScalar(d, raw, path, "an integer", toInt, v.SetInt)
	case t.Kind() == reflect.Bool:
		decodeScalar(d, raw, path, "true or false", toBool, v.SetBool)
	default:
		// The schema uses only the kinds above; reaching here is a bug in
		// the Config type, not in the user's file.
		panic(fmt.Sprintf("config: unsupported field kind %s at %s", t, path))
	}
}

// shorthands are the tables that may be written as one string, short for
// the key named: compaction.remoteEndpoint is a plain URL in pi's
// settings, and a pi settings block carries over as it is.
var shorthands = map[reflect.Type]string{
	reflect.TypeFor[RemoteEndpoint](): "url",
}

func (d *decoder) decodeStruct(raw any, v reflect.Value, path string) {
	if s, isString := raw.(string); isString {
		if key, ok := shorthands[v.Type()]; ok {
			raw = map[string]any{key: s}
		}
	}
	m, ok := asMap(raw)
	if !ok {
		d.addf(orRoot(path), "must be a table of keys, got %s", describe(raw))
		return
	}
	for _, key := range sortedKeys(m) {
		child := joinKey(path, key)
		f, found, suggestion := lookupField(v.Type(), key)
		if !found {
			switch {
			case suggestion != "":
				d.addf(child, "unknown key (did you mean %q?)", suggestion)
			case credentialKey(key):
				d.addf(child, "unknown key; credentials are never written inline: put it in an environment variable and name that variable (apiKeyEnv, authEnv)")
			default:
				d.addf(child, "unknown key")
			}
			continue
		}
		d.decode(m[key], v.Field(f.index), child)
	}
}

func (d *decoder) decodeSlice(raw any, v reflect.Value, path string) {
	et := v.Type().Elem()
	var items []any
	switch r := raw.(type) {
	case string:
		// Environment values: a comma-separated list of scalars.
		if et.Kind() != reflect.String {
			d.addf(path, "must be a list, got %s", describe(raw))
			return
		}
		for _, s := range strings.Split(r, ",") {
			if s = strings.TrimSpace(s); s != "" {
				items = append(items, s)
			}
		}
	default:
		rv := reflect.ValueOf(raw)
		if rv.Kind() != reflect.Slice {
			d.addf(path, "must be a list, got %s", describe(raw))
			return
		}
		for i := range rv.Len() {
			items = append(items, rv.Index(i).Interface())
		}
	}
	// Entries with problems are kept, their bad keys at defaults, so that
	// validation still reports what else is wrong with them.
	out := reflect.MakeSlice(v.Type(), 0, len(items))
	for i, item := range items {
		ev := elementDefault(et)
		if item == nil {
			// Kept as a default entry so that later entries keep their
			// index in messages.
			d.addf(fmt.Sprintf("%s[%d]", path, i), "empty list entry")
		}
		d.decode(item, ev, fmt.Sprintf("%s[%d]", path, i))
		out = reflect.Append(out, ev)
	}
	v.Set(out)
}

func (d *decoder) decodeMap(raw any, v reflect.Value, path string) {
	m, ok := asMap(raw)
	if !ok {
		d.addf(path, "must be a table of names to values, got %s", describe(raw))
		return
	}
	out := reflect.MakeMapWithSize(v.Type(), len(m))
	for _, key := range sortedKeys(m) {
		s, ok := scalarString(m[key])
		if !ok {
			d.addf(joinKey(path, key), "must be a string, got %s", describe(m[key]))
			continue
		}
		out.SetMapIndex(reflect.ValueOf(key), reflect.ValueOf(s))
	}
	v.Set(out)
}

func (d *decoder) decodeDuration(raw any, v reflect.Value, path string) {
	s, isString := raw.(string)
	if !isString {
		// A bare number is ambiguous (seconds? nanoseconds?); make the
		// user say which.
		if n, ok := toInt(raw); ok && n == 0 {
			v.SetInt(0)
			return
		}
		d.addf(path, "must be a duration with a unit, like \"5s\" or \"1m30s\", got %s", describe(raw))
		return
	}
	dur, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		d.addf(path, "must be a duration like \"5s\" or \"1m30s\", got %s", describe(raw))
		return
	}
	v.SetInt(int64(dur))
}

func asMap(raw any) (map[string]any, bool) {
	switch m := raw.(type) {
	case map[string]any:
		return m, true
	case map[any]any:
		out := make(map[string]any, len(m))
		for k, val := range m {
			out[fmt.Sprint(k)] = val
		}
		return out, true
	}
	return nil, false
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func joinKey(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func orRoot(path string) string {
	if path == "" {
		return "(root)"
	}
	return path
}

func scalarString(raw any) (string, bool) {
	switch r := raw.(type) {
	case string:
		return r, true
	case bool:
		return strconv.FormatBool(r), true
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return fmt.Sprint(r), true
	case float32:
		return strconv.FormatFloat(float64(r), 'f', -1, 32), true
	case float64:
		return strconv.FormatFloat(r, 'f', -1, 64), true
	}
	return "", false
}

func toInt(raw any) (int64, bool) {
	switch r := raw.(type) {
	case int:
		return int64(r), true
	case int8:
		return int64(r), true
	case int16:
		return int64(r), true
	case int32:
		return int64(r), true
	case int64:
		return r, true
	case uint8:
		return int64(r), true
	case uint16:
		return int64(r), true
	case uint32:
		return int64(r), true
	case uint:
		if uint64(r) > math.MaxInt64 {
			return 0, false
		}
		return int64(r), true
	case uint64:
		if r > math.MaxInt64 {
			return 0, false
		}
		return int64(r), true
	case float64:
		if r != math.Trunc(r) || math.Abs(r) > 1<<53 {
			return 0, false
		}
		return int64(r), true
	case string:
		n, err := strconv.ParseInt(strings.ReplaceAll(strings.TrimSpace(r), "_", ""), 10, 64)
		return n, err == nil
	}
	return 0, false
}

func toBool(raw any) (bool, bool) {
	switch r := raw.(type) {
	case bool:
		return r, true
	case string:
		b, err := strconv.ParseBool(strings.TrimSpace(r))
		return b, err == nil
	}
	return false, false
}

// describe renders a bad value for an error message, short and quoted.
func describe(raw any) string {
	switch r := raw.(type) {
	case string:
		if len(r) > 40 {
			r = r[:37] + "..."
		}
		return strconv.Quote(r)
	case map[string]any, map[any]any:
		return "a table"
	case []any:
		return "a list"
	}
	s, ok := scalarString(raw)
	if !ok {
		return fmt.Sprintf("a %T", raw)
	}
	return s
}

// toMap renders a configuration value as plain maps, lists and scalars with
// the file's key names; durations become strings like "5s". With mask set,
// secret-looking values are replaced (see Mask).
func toMap(v reflect.Value, hint string, mask bool) any {
	t := v.Type()
	switch {
	case t == durationType:
		return formatDuration(time.Duration(v.Int()))
	case t.Kind() == reflect.Struct:
		out := make(map[string]any)
		for _, f := range fieldsOf(t) {
			out[f.key] = toMap(v.Field(f.index), f.hint, mask)
		}
		return out
	case t.Kind() == reflect.Slice:
		out := make([]any, 0, v.Len())
		for i := range v.Len() {
			out = append(out, toMap(v.Index(i), "", mask))
		}
		if mask && hint == "args" {
			return maskArgs(out)
		}
		return out
	case t.Kind() == reflect.Map:
		out := make(map[string]any, v.Len())
		iter := v.MapRange()
		for iter.Next() {
			k, val := iter.Key().String(), iter.Value().String()
			if mask && (hint == "envmap" && secretName(k) || credential.Is(val)) {
				val = redact.Mask
			}
			out[k] = val
		}
		return out
	case t.Kind() == reflect.String:
		s := v.String()
		if mask {
			if hint == "url" {
				s = maskURL(s)
			}
			if credential.Is(s) {
				s = redact.Mask
			}
		}
		return s
	case t.Kind() == reflect.Int:
		return v.Int()
	case t.Kind() == reflect.Bool:
		return v.Bool()
	}
	panic(fmt.Sprintf("config: unsupported field kind %s", t))
}

// formatDuration writes d the way people type it: "5s", "1m", "1m30s",
// "150ms" rather than time.Duration's "1m0s".
func formatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// Map returns the configuration as nested maps keyed like the file, for
// display or re-encoding. With mask set, secrets are masked.
func (c *Config) Map(mask bool) map[string]any {
	return toMap(reflect.ValueOf(*c), "", mask).(map[string]any)
}

// Flatten returns every key of the configuration with its value rendered as
// JSON, for diffs. Plugins are keyed by name (plugins[audit].timeout), so an
// insertion does not make every later entry look changed; the key "plugins"
// itself holds the order of names. Values are not masked: compare, do not
// print them.
func (c *Config) Flatten() map[string]string {
	out := make(map[string]string)
	flattenInto(out, "", c.Map(false))
	return out
}

func flattenInto(out map[string]string, path string, v any) {
	switch val := v.(type) {
	case map[string]any:
		for k, child := range val {
			flattenInto(out, joinKey(path, k), child)
		}
		return
	case []any:
		if len(val) > 0 {
			if _, isTable := val[0].(map[string]any); isTable {
				names := make([]string, 0, len(val))
				for i, item := range val {
					m := item.(map[string]any)
					key := fmt.Sprintf("%s[%d]", path, i)
					if name, ok := m["name"].(string); ok && path == "plugins" {
						key = fmt.Sprintf("%s[%s]", path, name)
						names = append(names, name)
					} else {
						names = append(names, strconv.Itoa(i))
					}
					flattenInto(out, key, m)
				}
				out[path] = jsonString(names)
				return
			}
		}
	}
	out[path] = jsonString(v)
}

func jsonString(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// flattenMasked is Flatten with secrets masked, for showing changed values.
func (c *Config) flattenMasked() map[string]string {
	out := make(map[string]string)
	flattenInto(out, "", c.Map(true))
	return out
}
