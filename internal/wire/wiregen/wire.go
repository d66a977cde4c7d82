package wiregen

import (
	"strings"

	"google.golang.org/protobuf/compiler/protogen"
)

// genWire writes the conversions between the hooks types and the
// protobuf messages, into package wire; its hand-written raw,
// rawsToBytes and bytesToRaws carry raw JSON across.
func (c *contract) genWire(g *protogen.GeneratedFile) {
	header(g, c, "wire")
	for _, e := range c.enums {
		c.genEnum(g, e)
	}
	for _, t := range c.types {
		c.genToProto(g, t)
		c.genFromProto(g, t)
	}
}

func (c *contract) hooks(g *protogen.GeneratedFile, name string) string {
	return g.QualifiedGoIdent(hooksPackage.Ident(name))
}

func convName(t *goType, dir string) string {
	if t.exported {
		return t.name + dir
	}
	return strings.ToLower(t.name[:1]) + t.name[1:] + dir
}

func (c *contract) genEnum(g *protogen.GeneratedFile, e *goEnum) {
	h := c.hooks(g, e.name)
	pb := g.QualifiedGoIdent(e.enum.GoIdent)
	g.P()
	g.P("// ", e.name, "ToProto maps a ", h, "; unknown values become the zero value.")
	g.P("func ", e.name, "ToProto(v ", h, ") ", pb, " {")
	g.P("switch v {")
	for _, v := range e.values {
		g.P("case ", c.hooks(g, v.constant), ":")
		g.P("return ", g.QualifiedGoIdent(v.value.GoIdent))
	}
	g.P("}")
	g.P("return ", g.QualifiedGoIdent(e.enum.Values[0].GoIdent))
	g.P("}")
	g.P()
	g.P("// ", e.name, "FromProto maps a ", pb, "; unknown values become \"\".")
	g.P("func ", e.name, "FromProto(v ", pb, ") ", h, " {")
	g.P("switch v {")
	for _, v := range e.values {
		g.P("case ", g.QualifiedGoIdent(v.value.GoIdent), ":")
		g.P("return ", c.hooks(g, v.constant))
	}
	g.P("}")
	g.P("return \"\"")
	g.P("}")
}

// toExpr is the protobuf value of a plain (non-statement) field of v.
func toExpr(f *goField) string {
	v := "v." + f.name
	switch {
	case f.kind == kindInt:
		return "int64(" + v + ")"
	case f.kind == kindEnum:
		return f.enum.name + "ToProto(" + v + ")"
	case f.kind == kindRaw && f.repeated:
		return "rawsToBytes(" + v + ")"
	case f.kind == kindMessage && f.pointer:
		return convName(f.msg, "ToProto") + "(" + v + ")"
	case f.kind == kindMessage:
		return convName(f.msg, "ToProto") + "(&" + v + ")"
	}
	return v
}

func fromExpr(f *goField) string {
	m := "m.Get" + f.field.GoName + "()"
	switch {
	case f.kind == kindInt:
		return "int(" + m + ")"
	case f.kind == kindEnum:
		return f.enum.name + "FromProto(" + m + ")"
	case f.kind == kindRaw && f.repeated:
		return "bytesToRaws(" + m + ")"
	case f.kind == kindRaw:
		return "raw(" + m + ")"
	case f.kind == kindMessage:
		return convName(f.msg, "FromProto") + "(" + m + ")"
	}
	return m
}

// plain says whether a field converts as one expression in a literal.
func plain(f *goField) bool {
	return f.field.Oneof == nil && f.kind != kindCancel && !(f.kind == kindMessage && (f.repeated || f.pointer))
}

func (c *contract) genToProto(g *protogen.GeneratedFile, t *goType) {
	h, pb := c.hooks(g, t.name), g.QualifiedGoIdent(t.msg.GoIdent)
	name := convName(t, "ToProto")
	g.P()
	g.P("// ", name, " converts a ", h, " to its message.")
	g.P("func ", name, "(v *", h, ") *", pb, " {")
	switch {
	case !t.exported:
		g.P("if v == nil {")
		g.P("return nil")
		g.P("}")
	case t.result:
		g.P("if v == nil {")
		g.P("return &", pb, "{}")
		g.P("}")
	}
	g.P("m := &", pb, "{")
	for _, f := range t.fields {
		if plain(f) {
			g.P(f.field.GoName, ": ", toExpr(f), ",")
		}
	}
	g.P("}")
	var oneof *protogen.Oneof
	for _, f := range t.fields {
		switch {
		case f.field.Oneof != nil:
			if f.field.Oneof == oneof {
				continue
			}
			oneof = f.field.Oneof
			// The first member set is sent.
			g.P("switch {")
			for _, o := range t.fields {
				if o.field.Oneof != oneof {
					continue
				}
				wrapper := g.QualifiedGoIdent(o.field.GoIdent)
				if o.kind == kindCancel {
					g.P("case v.", o.name, ":")
					g.P("m.", oneof.GoName, " = &", wrapper, "{", o.field.GoName, ": &", g.QualifiedGoIdent(o.field.Message.GoIdent), "{Reason: v.", o.name, "Reason}}")
				} else {
					g.P("case v.", o.name, " != nil:")
					g.P("m.", oneof.GoName, " = &", wrapper, "{", o.field.GoName, ": ", toExpr(o), "}")
				}
			}
			g.P("}")
		case f.kind == kindCancel:
			g.P("if v.", f.name, " {")
			g.P("m.", f.field.GoName, " = &", g.QualifiedGoIdent(f.field.Message.GoIdent), "{Reason: v.", f.name, "Reason}")
			g.P("}")
		case f.kind == kindMessage && f.repeated:
			g.P("for i := range v.", f.name, " {")
			g.P("m.", f.field.GoName, " = append(m.", f.field.GoName, ", ", convName(f.msg, "ToProto"), "(&v.", f.name, "[i]))")
			g.P("}")
		case f.kind == kindMessage && f.pointer:
			g.P("m.", f.field.GoName, " = ", toExpr(f))
		}
	}
	g.P("return m")
	g.P("}")
}

func (c *contract) genFromProto(g *protogen.GeneratedFile, t *goType) {
	h, pb := c.hooks(g, t.name), g.QualifiedGoIdent(t.msg.GoIdent)
	name := convName(t, "FromProto")
	ret := h
	g.P()
	switch {
	case !t.exported:
		g.P("// ", name, " converts a ", pb, "; nil becomes the zero value.")
	case t.result:
		g.P("// ", name, " converts a ", pb, "; an empty answer becomes nil.")
		ret = "*" + h
	default:
		g.P("// ", name, " converts a ", pb, ".")
		ret = "*" + h
	}
	g.P("func ", name, "(m *", pb, ") ", ret, " {")
	g.P("v := ", h, "{")
	for _, f := range t.fields {
		if plain(f) {
			g.P(f.name, ": ", fromExpr(f), ",")
		}
	}
	g.P("}")
	var oneof *protogen.Oneof
	for _, f := range t.fields {
		switch {
		case f.field.Oneof != nil:
			if f.field.Oneof == oneof {
				continue
			}
			oneof = f.field.Oneof
			g.P("switch x := m.Get", oneof.GoName, "().(type) {")
			for _, o := range t.fields {
				if o.field.Oneof != oneof {
					continue
				}
				g.P("case *", g.QualifiedGoIdent(o.field.GoIdent), ":")
				if o.kind == kindCancel {
					g.P("v.", o.name, ", v.", o.name, "Reason = true, x.", o.field.GoName, ".GetReason()")
				} else {
					g.P("p := ", convName(o.msg, "FromProto"), "(x.", o.field.GoName, ")")
					g.P("v.", o.name, " = &p")
				}
			}
			g.P("}")
		case f.kind == kindCancel:
			g.P("if x := m.Get", f.field.GoName, "(); x != nil {")
			g.P("v.", f.name, ", v.", f.name, "Reason = true, x.GetReason()")
			g.P("}")
		case f.kind == kindMessage && f.repeated:
			g.P("for _, x := range m.Get", f.field.GoName, "() {")
			g.P("v.", f.name, " = append(v.", f.name, ", ", convName(f.msg, "FromProto"), "(x))")
			g.P("}")
		case f.kind == kindMessage && f.pointer:
			g.P("if x := m.Get", f.field.GoName, "(); x != nil {")
			g.P("p := ", convName(f.msg, "FromProto"), "(x)")
			g.P("v.", f.name, " = &p")
			g.P("}")
		}
	}
	switch {
	case !t.exported:
		g.P("return v")
	case t.result:
		var zero []string
		for _, f := range t.fields {
			for _, n := range f.goFields() {
				zero = append(zero, isZero(f, n))
			}
		}
		g.P("if ", strings.Join(zero, " && "), " {")
		g.P("return nil")
		g.P("}")
		g.P("return &v")
	default:
		g.P("return &v")
	}
	g.P("}")
}

// isZero is the test that Go field name of f holds its zero value.
func isZero(f *goField, name string) string {
	v := "v." + name
	switch {
	case f.repeated, f.kind == kindRaw:
		return "len(" + v + ") == 0"
	case f.kind == kindCancel && name == f.name, f.kind == kindBool:
		return "!" + v
	case f.kind == kindCancel, f.kind == kindString, f.kind == kindEnum:
		return v + ` == ""`
	case f.kind == kindInt:
		return v + " == 0"
	}
	return v + " == nil"
}
