package wiregen

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/compiler/protogen"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// contract is the Go form of one proto file's hook events.
type contract struct {
	file   *protogen.File
	events []*event
	enums  []*goEnum
	types  []*goType // in the file's order
	// goNames maps proto names (messages, snake_case fields) to Go names,
	// so that comments written in proto terms read in Go terms.
	goNames map[string]string
}

// event is one rpc with the event option.
type event struct {
	id     string
	rpc    string
	in     *goType
	result *goType // nil for a notification
}

type goEnum struct {
	enum   *protogen.Enum
	name   string
	values []enumValue // without the zero value, which is ""
}

type enumValue struct {
	value    *protogen.EnumValue
	constant string // Go constant name, e.g. ReasonManual
	str      string // its value, e.g. "manual"
}

type goType struct {
	msg      *protogen.Message
	name     string
	result   bool // reached from a result: message fields are pointers
	exported bool // an event or result: its conversions are exported
	fields   []*goField
	host     []hostField
}

type fieldKind int

const (
	kindString fieldKind = iota
	kindBool
	kindInt
	kindRaw
	kindEnum
	kindMessage
	kindCancel // a Cancel message: Cancel bool + CancelReason string
)

type goField struct {
	field     *protogen.Field
	name      string
	kind      fieldKind
	repeated  bool
	pointer   bool
	omitempty bool
	enum      *goEnum
	msg       *goType
}

type hostField struct{ name, typ, doc string }

// cancelMessage is the message a kindCancel field has.
const cancelMessage = "Cancel"

func newContract(f *protogen.File, opts *options) (*contract, error) {
	c := &contract{file: f, goNames: map[string]string{}}
	byMsg := map[protoreflect.FullName]*goType{}
	byEnum := map[protoreflect.FullName]*goEnum{}
	var reach func(m *protogen.Message, name string, result, exported bool) (*goType, error)
	reach = func(m *protogen.Message, name string, result, exported bool) (*goType, error) {
		if t, ok := byMsg[m.Desc.FullName()]; ok {
			if t.result != result {
				return nil, fmt.Errorf("%s is reached from both an event and a result", m.Desc.FullName())
			}
			return t, nil
		}
		t := &goType{msg: m, name: name, result: result, exported: exported}
		byMsg[m.Desc.FullName()] = t
		if name != string(m.Desc.Name()) {
			c.goNames[string(m.Desc.Name())] = name
		}
		for _, h := range opts.messages(m.Desc.Options(), "host_field") {
			t.host = append(t.host, hostField{name: h["name"], typ: h["type"], doc: h["doc"]})
		}
		for _, fl := range m.Fields {
			gf := &goField{
				field:     fl,
				name:      goFieldName(string(fl.Desc.Name())),
				repeated:  fl.Desc.IsList(),
				omitempty: opts.bool(fl.Desc.Options(), "omitempty"),
			}
			switch fl.Desc.Kind() {
			case protoreflect.StringKind:
				gf.kind = kindString
			case protoreflect.BoolKind:
				gf.kind = kindBool
			case protoreflect.Int64Kind:
				gf.kind = kindInt
			case protoreflect.BytesKind:
				gf.kind = kindRaw
			case protoreflect.EnumKind:
				gf.kind = kindEnum
				e, ok := byEnum[fl.Enum.Desc.FullName()]
				if !ok {
					e = newEnum(fl.Enum)
					byEnum[fl.Enum.Desc.FullName()] = e
					c.enums = append(c.enums, e)
				}
				gf.enum = e
			case protoreflect.MessageKind:
				if fl.Message.Desc.Name() == cancelMessage && !gf.repeated {
					gf.kind = kindCancel
					break
				}
				gf.kind = kindMessage
				gf.pointer = result && !gf.repeated
				sub, err := reach(fl.Message, string(fl.Message.Desc.Name()), result, false)
				if err != nil {
					return nil, err
				}
				gf.msg = sub
			default:
				return nil, fmt.Errorf("%s: kind %s has no Go form yet", fl.Desc.FullName(), fl.Desc.Kind())
			}
			if fl.Oneof != nil && !gf.pointer && gf.kind != kindCancel {
				return nil, fmt.Errorf("%s: only message fields may be oneof members", fl.Desc.FullName())
			}
			t.fields = append(t.fields, gf)
			if strings.Contains(string(fl.Desc.Name()), "_") {
				c.goNames[string(fl.Desc.Name())] = gf.name
			}
		}
		return t, nil
	}
	for _, s := range f.Services {
		for _, m := range s.Methods {
			id := opts.string(m.Desc.Options(), "event")
			if id == "" {
				continue
			}
			ev := &event{id: id, rpc: m.GoName}
			var err error
			if ev.in, err = reach(m.Input, m.GoName+"Event", false, true); err != nil {
				return nil, err
			}
			if len(m.Output.Fields) > 0 {
				if ev.result, err = reach(m.Output, m.GoName+"Result", true, true); err != nil {
					return nil, err
				}
			}
			c.events = append(c.events, ev)
		}
	}
	if len(c.events) == 0 {
		return nil, nil
	}
	// Field names of the other messages (the host API's) read in Go terms too.
	for _, m := range f.Messages {
		for _, fl := range m.Fields {
			if n := string(fl.Desc.Name()); strings.Contains(n, "_") && c.goNames[n] == "" {
				c.goNames[n] = goFieldName(n)
			}
		}
	}
	for _, m := range f.Messages {
		if t, ok := byMsg[m.Desc.FullName()]; ok {
			c.types = append(c.types, t)
		}
	}
	return c, nil
}

func newEnum(e *protogen.Enum) *goEnum {
	name := string(e.Desc.Name())
	prefix := strings.ToUpper(snake(name)) + "_"
	g := &goEnum{enum: e, name: name}
	for _, v := range e.Values {
		if v.Desc.Number() == 0 {
			continue
		}
		s := strings.ToLower(strings.TrimPrefix(string(v.Desc.Name()), prefix))
		g.values = append(g.values, enumValue{value: v, constant: name + goFieldName(s), str: s})
	}
	return g
}

// goFieldName is protoc-gen-go's CamelCase with the word "id" as "ID".
func goFieldName(snakeName string) string {
	var b strings.Builder
	for _, w := range strings.Split(snakeName, "_") {
		if w == "id" {
			b.WriteString("ID")
			continue
		}
		if w != "" {
			b.WriteString(strings.ToUpper(w[:1]) + w[1:])
		}
	}
	return b.String()
}

// snake turns LogLevel into log_level.
func snake(camel string) string {
	var b strings.Builder
	for i, r := range camel {
		if i > 0 && r >= 'A' && r <= 'Z' {
			b.WriteByte('_')
		}
		b.WriteRune(r)
	}
	return strings.ToLower(b.String())
}

// goType is the Go type of f in package hooks, json being how that file
// names package encoding/json.
func (f *goField) goType(json string) string {
	var t string
	switch f.kind {
	case kindString:
		t = "string"
	case kindBool:
		t = "bool"
	case kindInt:
		t = "int"
	case kindRaw:
		t = json + "RawMessage"
	case kindEnum:
		t = f.enum.name
	case kindMessage:
		t = f.msg.name
	}
	if f.pointer {
		t = "*" + t
	}
	if f.repeated {
		t = "[]" + t
	}
	return t
}

// goFields lists the Go struct fields of f: one, or two for a Cancel.
func (f *goField) goFields() []string {
	if f.kind == kindCancel {
		return []string{f.name, f.name + "Reason"}
	}
	return []string{f.name}
}

func (f *goField) jsonTag(name string) string {
	key := f.field.Desc.JSONName()
	if name != f.name { // CancelReason
		key += "Reason"
	}
	if f.omitempty {
		key += ",omitempty"
	}
	return "`json:\"" + key + "\"`"
}
