package wiregen

import (
	"google.golang.org/protobuf/compiler/protogen"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/dynamicpb"
)

// optionPackage is the proto package of options.proto's extensions.
const optionPackage = "pith.hooks.v1."

// options reads options.proto's extensions through the descriptors of the
// request itself, so that the generator never links its own output and a
// new option works on the first run.
type options struct {
	types *dynamicpb.Types
}

func newOptions(gen *protogen.Plugin) (*options, error) {
	files := new(protoregistry.Files)
	for _, f := range gen.Files {
		if err := files.RegisterFile(f.Desc); err != nil {
			return nil, err
		}
	}
	return &options{types: dynamicpb.NewTypes(files)}, nil
}

// get returns the extension name of the options opts, when it is set.
func (o *options) get(opts proto.Message, name string) (protoreflect.Value, bool) {
	xt, err := o.types.FindExtensionByName(protoreflect.FullName(optionPackage + name))
	if err != nil || opts == nil {
		return protoreflect.Value{}, false
	}
	// The extension arrived as unknown bytes: decode them again with it known.
	b, err := proto.Marshal(opts)
	if err != nil {
		return protoreflect.Value{}, false
	}
	m := opts.ProtoReflect().New().Interface()
	if err := (proto.UnmarshalOptions{Resolver: o.types}).Unmarshal(b, m); err != nil {
		return protoreflect.Value{}, false
	}
	if !m.ProtoReflect().Has(xt.TypeDescriptor()) {
		return protoreflect.Value{}, false
	}
	return m.ProtoReflect().Get(xt.TypeDescriptor()), true
}

func (o *options) bool(opts proto.Message, name string) bool {
	v, ok := o.get(opts, name)
	return ok && v.Bool()
}

func (o *options) string(opts proto.Message, name string) string {
	if v, ok := o.get(opts, name); ok {
		return v.String()
	}
	return ""
}

// messages returns a repeated message extension as field name → value maps.
func (o *options) messages(opts proto.Message, name string) []map[string]string {
	v, ok := o.get(opts, name)
	if !ok {
		return nil
	}
	var out []map[string]string
	for i := range v.List().Len() {
		m := v.List().Get(i).Message()
		row := map[string]string{}
		m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
			row[string(fd.Name())] = v.String()
			return true
		})
		out = append(out, row)
	}
	return out
}
