package wiregen

import (
	"strings"

	"google.golang.org/protobuf/compiler/protogen"
)

// genSDK writes package sdk's aliases of the contract types. go doc does
// not follow an alias, so each alias's comment lists its type's fields.
func (c *contract) genSDK(g *protogen.GeneratedFile) {
	header(g, c, "sdk")
	var ids []string
	for _, ev := range c.events {
		ids = append(ids, ev.id)
	}
	comment(g, wrap("EventID names a hook event: "+strings.Join(ids, ", ")+"."))
	g.P("type EventID = ", c.hooks(g, "EventID"))
	for _, e := range c.enums {
		var names []string
		for _, v := range e.values {
			names = append(names, v.constant)
		}
		g.P()
		comment(g, c.doc(e.enum.Comments.Leading))
		comment(g, wrap("Values: "+strings.Join(names, ", ")+"."))
		g.P("type ", e.name, " = ", c.hooks(g, e.name))
	}
	for _, t := range c.types {
		g.P()
		comment(g, c.doc(t.msg.Comments.Leading))
		g.P("//")
		g.P("// Fields:")
		g.P("//")
		for _, f := range t.fields {
			g.P("//   - ", f.name, " ", f.goType("json."), ": ", sentence(c.doc(f.field.Comments.Leading)))
			if f.kind == kindCancel {
				g.P("//   - ", f.name, "Reason string: ", sentence(c.doc(f.field.Message.Fields[0].Comments.Leading)))
			}
		}
		for _, h := range t.host {
			g.P("//   - ", h.name, " ", h.typ, ": host-side only, never sent to a plugin.")
		}
		g.P("type ", t.name, " = ", c.hooks(g, t.name))
	}
	g.P()
	g.P("// Event ids and enum values.")
	g.P("const (")
	for _, ev := range c.events {
		g.P("Event", ev.rpc, " = ", c.hooks(g, "Event"+ev.rpc))
	}
	for _, e := range c.enums {
		g.P()
		for _, v := range e.values {
			g.P(v.constant, " = ", c.hooks(g, v.constant))
		}
	}
	g.P(")")
}
