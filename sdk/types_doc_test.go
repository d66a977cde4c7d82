package sdk_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"strings"
	"testing"

	"github.com/pith-dev/pith/sdk"
)

// TestAliasDocsListFields keeps the field lists in types.go complete (and
// checks those generated into types_gen.go): go doc does not follow an
// alias, so each alias of a struct lists the struct's exported fields in
// its comment, one "- Name type: …" line each.
func TestAliasDocsListFields(t *testing.T) {
	structs := map[string]reflect.Type{}
	for _, v := range []any{
		sdk.Label{}, sdk.Preparation{}, sdk.BeforeCompactEvent{}, sdk.BeforeCompactResult{}, sdk.Compaction{},
		sdk.CompactingEvent{}, sdk.CompactingResult{}, sdk.CompactEvent{}, sdk.BeforeTreeEvent{},
		sdk.BeforeTreeResult{}, sdk.BranchSummary{}, sdk.TreeEvent{}, sdk.Funcs{},
		sdk.ReadEntriesRequest{}, sdk.CompleteRequest{}, sdk.CompleteResponse{},
	} {
		structs[reflect.TypeOf(v).Name()] = reflect.TypeOf(v)
	}
	var decls []ast.Decl
	for _, name := range []string{"types.go", "types_gen.go"} {
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		decls = append(decls, f.Decls...)
	}
	seen := map[string]bool{}
	for _, d := range decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.TYPE {
			continue
		}
		for _, s := range g.Specs {
			ts := s.(*ast.TypeSpec)
			st, ok := structs[ts.Name.Name]
			if !ok {
				continue
			}
			seen[ts.Name.Name] = true
			doc := g.Doc.Text()
			if ts.Doc != nil {
				doc = ts.Doc.Text()
			}
			for i := range st.NumField() {
				fl := st.Field(i)
				if !fl.IsExported() {
					continue
				}
				if !strings.Contains(doc, "- "+fl.Name+" ") {
					t.Errorf("the comment of sdk.%s does not list field %s", ts.Name.Name, fl.Name)
				}
			}
		}
	}
	for name := range structs {
		if !seen[name] {
			t.Errorf("sdk.%s is not declared on its own in types.go or types_gen.go", name)
		}
	}
}
