package config

import (
	"bytes"
	"encoding/json"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// schemaLeaf is one key of the schema and the Go field that holds it.
type schemaLeaf struct {
	key   string // compaction.keepRecentTokens, plugins[].name
	field string // Compaction.KeepRecentTokens
}

// schemaLeaves walks the Config struct: every key a file may set.
func schemaLeaves(t reflect.Type, prefix string) []schemaLeaf {
	var out []schemaLeaf
	for i := range t.NumField() {
		f := t.Field(i)
		key := f.Tag.Get("koanf")
		if key == "" || key == "-" || !f.IsExported() {
			continue
		}
		full := key
		if prefix != "" {
			full = prefix + "." + key
		}
		ft := f.Type
		switch {
		case ft.Kind() == reflect.Struct && ft != reflect.TypeFor[time.Duration]():
			out = append(out, schemaLeaves(ft, full)...)
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
			out = append(out, schemaLeaves(ft.Elem(), full+"[]")...)
		default:
			out = append(out, schemaLeaf{key: full, field: t.Name() + "." + f.Name})
		}
	}
	return out
}

// helperFiles are the files of this package whose functions act on the
// configuration for other packages (Chain, SummarizerContextWindow, the
// plugin diff that decides restarts); the rest only load, validate,
// render or copy it, which is not an effect.
var helperFiles = map[string]bool{"config.go": true, "plugindiff.go": true, "workspace.go": true}

// notAnEffect are functions of helperFiles that touch every field without
// acting on any.
var notAnEffect = map[string]bool{"Defaults": true, "defaultPlugin": true, "Clone": true}

type listedPackage struct {
	ImportPath string
	Dir        string
	Export     string
	GoFiles    []string
	Module     *struct{ Path string }
}

// readFields type-checks every non-test package of the module and returns
// the config struct fields ("Compaction.KeepRecentTokens") that code reads.
func readFields(t *testing.T) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-export", "-json=ImportPath,Dir,Export,GoFiles,Module", "./...")
	cmd.Dir = ".."
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	const configPath = "github.com/pith-dev/pith/config"
	exports := map[string]string{}
	var mine []listedPackage
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listedPackage
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		exports[p.ImportPath] = p.Export
		if p.Module != nil && p.Module.Path == "github.com/pith-dev/pith" && !strings.Contains(p.ImportPath, "/internal/testplugins") {
			mine = append(mine, p)
		}
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		return os.Open(exports[path])
	})
	reads := map[string][]string{} // field → where
	for _, p := range mine {
		var files []*ast.File
		for _, name := range p.GoFiles {
			f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
		}
		info := &types.Info{Selections: map[*ast.SelectorExpr]*types.Selection{}, Types: map[ast.Expr]types.TypeAndValue{}}
		conf := types.Config{Importer: imp.(types.ImporterFrom), Error: func(error) {}}
		if _, err := conf.Check(p.ImportPath, fset, files, info); err != nil {
			t.Fatalf("type-check %s: %v", p.ImportPath, err)
		}
		for _, f := range files {
			base := filepath.Base(fset.Position(f.Pos()).Filename)
			if p.ImportPath == configPath && !helperFiles[base] {
				continue
			}
			written := map[*ast.SelectorExpr]bool{}
			ast.Inspect(f, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.FuncDecl:
					if p.ImportPath == configPath && notAnEffect[n.Name.Name] {
						return false
					}
				case *ast.AssignStmt:
					for _, l := range n.Lhs {
						if s, ok := l.(*ast.SelectorExpr); ok {
							written[s] = true
						}
					}
				case *ast.CallExpr:
					// A conversion of a config struct to another type
					// (hooks.Limits(p.Limits)) hands on every field.
					if tv, ok := info.Types[n.Fun]; !ok || !tv.IsType() || len(n.Args) != 1 {
						return true
					}
					named, ok := info.TypeOf(n.Args[0]).(*types.Named)
					if !ok || named.Obj().Pkg() == nil || named.Obj().Pkg().Path() != configPath {
						return true
					}
					if st, ok := named.Underlying().(*types.Struct); ok {
						for i := range st.NumFields() {
							k := named.Obj().Name() + "." + st.Field(i).Name()
							reads[k] = append(reads[k], p.ImportPath+"/"+base)
						}
					}
				case *ast.SelectorExpr:
					sel := info.Selections[n]
					if sel == nil || sel.Kind() != types.FieldVal || written[n] {
						return true
					}
					obj := sel.Obj()
					if obj.Pkg() == nil || obj.Pkg().Path() != configPath {
						return true
					}
					recv := sel.Recv()
					if ptr, ok := recv.(*types.Pointer); ok {
						recv = ptr.Elem()
					}
					if named, ok := recv.(*types.Named); ok {
						k := named.Obj().Name() + "." + obj.Name()
						reads[k] = append(reads[k], p.ImportPath+"/"+base)
					}
				}
				return true
			})
		}
	}
	return reads
}

// TestEveryKeyIsRead walks the schema and fails on any key that no code
// outside loading, validation and display reads — an accepted key that
// does nothing — unless InertKeys lists it with its reason; and on any
// listed key that is read after all, so the list stays exact.
func TestEveryKeyIsRead(t *testing.T) {
	if testing.Short() {
		t.Skip("type-checks the whole module")
	}
	reads := readFields(t)
	var unread []string
	for _, l := range schemaLeaves(reflect.TypeFor[Config](), "") {
		_, listed := InertKeys[l.key]
		switch read := len(reads[l.field]) > 0; {
		case !read && !listed:
			t.Errorf("%s (%s) is accepted but no code reads it: wire it or list it in InertKeys with the reason", l.key, l.field)
		case read && listed:
			t.Errorf("%s is listed in InertKeys but %s reads it: take it off the list", l.key, strings.Join(slices.Compact(reads[l.field]), ", "))
		}
		if len(reads[l.field]) == 0 {
			unread = append(unread, l.key)
		}
	}
	for k := range InertKeys {
		found := false
		for _, l := range schemaLeaves(reflect.TypeFor[Config](), "") {
			found = found || l.key == k
		}
		if !found {
			t.Errorf("InertKeys lists %s, which is not a key", k)
		}
	}
	sort.Strings(unread)
	t.Logf("keys no code reads: %v", unread)
}
