package archtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/importer"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
)

// The Go toolchain stops another module importing a package under
// internal/, but not using one of its types that a public package hands
// out: an exported function returning *wire.Conn, a struct field of a
// generated protobuf type, an alias. SurfaceLeaks finds those by reading
// the public packages' export data (what the compiler records of their
// API, so no source is type-checked here) and walking every exported name
// down to the named types it mentions.

// SurfaceLeaks loads the packages matching patterns (from dir) with one
// `go list -export` run and returns, sorted, one line for each exported
// name of a root package — one matching patterns, not a command — whose
// type mentions a named type from a package matching hidden. A
// package matching hidden is not itself checked.
func SurfaceLeaks(ctx context.Context, goBin, dir string, hidden []string, patterns ...string) ([]string, error) {
	args := append([]string{"list", "-e", "-export", "-deps", "-json=ImportPath,Name,Export,DepOnly,Error"}, patterns...)
	cmd := exec.CommandContext(ctx, goBin, args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list -export %s: %w: %s", strings.Join(patterns, " "), err, strings.TrimSpace(stderr.String()))
	}
	type listed struct {
		ImportPath, Name, Export string
		DepOnly                  bool
		Error                    *struct{ Err string }
	}
	exports := map[string]string{}
	var roots []string
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("decode go list output: %w", err)
		}
		exports[p.ImportPath] = p.Export
		if !p.DepOnly && p.Name != "main" && p.Error == nil && !matchAny(hidden, p.ImportPath) {
			roots = append(roots, p.ImportPath)
		}
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		file := exports[path]
		if file == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(file)
	})
	var leaks []string
	for _, root := range roots {
		pkg, err := imp.Import(root)
		if err != nil {
			return nil, fmt.Errorf("read the API of %s: %w", root, err)
		}
		leaks = append(leaks, surfaceLeaks(pkg, hidden)...)
	}
	slices.Sort(leaks)
	return leaks, nil
}

// surfaceLeaks walks the exported names of pkg.
func surfaceLeaks(pkg *types.Package, hidden []string) []string {
	w := &surfaceWalker{pkg: pkg, hidden: hidden}
	scope := pkg.Scope()
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		// Each name is walked afresh, so each one that leaks is reported;
		// seen only stops the walk going round a recursive type.
		w.seen = map[types.Type]bool{}
		w.at = pkg.Path() + "." + name
		w.walk(obj.Type())
		if tn, ok := obj.(*types.TypeName); ok && !tn.IsAlias() {
			if named, ok := tn.Type().(*types.Named); ok {
				w.methods(named)
			}
		}
	}
	return w.leaks
}

type surfaceWalker struct {
	pkg    *types.Package
	hidden []string
	seen   map[types.Type]bool
	at     string // the exported name being walked, for the report
	leaks  []string
}

// methods walks the exported methods of a named type of the package.
func (w *surfaceWalker) methods(t *types.Named) {
	at := w.at
	for m := range t.Methods() {
		if m.Exported() {
			w.at = at + "." + m.Name()
			w.walk(m.Type())
		}
	}
	w.at = at
}

func (w *surfaceWalker) walk(t types.Type) {
	if t == nil || w.seen[t] {
		return
	}
	w.seen[t] = true
	switch t := t.(type) {
	case *types.Alias:
		w.walk(types.Unalias(t))
	case *types.Named:
		obj := t.Obj()
		if obj.Pkg() != nil && matchAny(w.hidden, obj.Pkg().Path()) {
			w.leaks = append(w.leaks, fmt.Sprintf("%s exposes %s.%s", w.at, obj.Pkg().Path(), obj.Name()))
			return
		}
		for arg := range t.TypeArgs().Types() {
			w.walk(arg)
		}
		// A type of this package that is not exported can still be handed
		// out (a function returning *impl): what it exposes counts. Other
		// packages' types are checked as roots of their own.
		if obj.Pkg() == w.pkg {
			w.walk(t.Underlying())
			w.methods(t)
		}
	case *types.Pointer:
		w.walk(t.Elem())
	case *types.Slice:
		w.walk(t.Elem())
	case *types.Array:
		w.walk(t.Elem())
	case *types.Chan:
		w.walk(t.Elem())
	case *types.Map:
		w.walk(t.Key())
		w.walk(t.Elem())
	case *types.Signature:
		w.walk(t.Params())
		w.walk(t.Results())
	case *types.Tuple:
		for v := range t.Variables() {
			w.walk(v.Type())
		}
	case *types.Struct:
		for f := range t.Fields() {
			// An embedded field promotes its exported members even when
			// its own name is not exported.
			if f.Exported() || f.Embedded() {
				w.walk(f.Type())
			}
		}
	case *types.Interface:
		for m := range t.ExplicitMethods() {
			if m.Exported() {
				w.walk(m.Type())
			}
		}
		for e := range t.EmbeddedTypes() {
			w.walk(e)
		}
	case *types.TypeParam:
		w.walk(t.Constraint())
	}
}
