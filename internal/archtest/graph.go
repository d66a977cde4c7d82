package archtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
)

// Package is one node of the import graph.
type Package struct {
	ImportPath string
	// Name is the package clause's name ("main" for a command).
	Name     string
	Standard bool
	// Imports are the non-test imports: what a binary links.
	Imports []string
	// TestImports and XTestImports are what the package's tests import.
	TestImports  []string
	XTestImports []string
	// Error is set when go list could not load the package fully (a
	// half-written package, say); its imports may then be incomplete.
	Error *struct{ Err string }
}

// Graph is an import graph keyed by import path.
type Graph map[string]*Package

// Load runs `go list -e -deps -json` once on patterns (from dir; "" is the
// current directory) and returns the graph of every package listed and all
// their dependencies. -e keeps one broken package from hiding the rest.
func Load(ctx context.Context, goBin, dir string, patterns ...string) (Graph, error) {
	args := append([]string{"list", "-e", "-deps",
		"-json=ImportPath,Name,Standard,Imports,TestImports,XTestImports,Error"}, patterns...)
	cmd := exec.CommandContext(ctx, goBin, args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list %s: %w: %s", strings.Join(patterns, " "), err, strings.TrimSpace(stderr.String()))
	}
	return decode(bytes.NewReader(out))
}

// decode reads go list's stream of JSON objects.
func decode(r io.Reader) (Graph, error) {
	g := Graph{}
	dec := json.NewDecoder(r)
	for {
		var p Package
		err := dec.Decode(&p)
		if errors.Is(err, io.EOF) {
			return g, nil
		}
		if err != nil {
			return nil, fmt.Errorf("decode go list output: %w", err)
		}
		g[p.ImportPath] = &p
	}
}

// Match reports whether path matches pattern: an exact import path, or
// "prefix/..." for prefix and everything under it.
func Match(pattern, path string) bool {
	if prefix, ok := strings.CutSuffix(pattern, "/..."); ok {
		return path == prefix || strings.HasPrefix(path, prefix+"/")
	}
	return path == pattern
}

// Select returns the packages of g matching any of patterns, sorted.
func (g Graph) Select(patterns ...string) []string {
	var out []string
	for path := range g {
		for _, pat := range patterns {
			if Match(pat, path) {
				out = append(out, path)
				break
			}
		}
	}
	slices.Sort(out)
	return out
}

// FindDep looks for a package matching any of forbidden in the non-test
// dependency closure of root, and returns the import chain from root to the
// first one found (breadth first, so the chain is a shortest one), or nil.
// The root itself is not a dependency of itself.
func (g Graph) FindDep(root string, forbidden ...string) []string {
	parent := map[string]string{root: ""}
	queue := []string{root}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		p := g[cur]
		if p == nil {
			continue
		}
		for _, imp := range p.Imports {
			if _, seen := parent[imp]; seen {
				continue
			}
			parent[imp] = cur
			for _, f := range forbidden {
				if Match(f, imp) {
					var chain []string
					for n := imp; n != ""; n = parent[n] {
						chain = append(chain, n)
					}
					slices.Reverse(chain)
					return chain
				}
			}
			queue = append(queue, imp)
		}
	}
	return nil
}

// Linkers returns the commands (package main) among the packages of g
// matching scope whose non-test closure includes target: the binaries
// that link it. With target the plugin SDK, these are the plugin binaries,
// wherever they are written.
func (g Graph) Linkers(target string, scope ...string) []string {
	var out []string
	for _, path := range g.Select(scope...) {
		if p := g[path]; p.Name == "main" && g.FindDep(path, target) != nil {
			out = append(out, path)
		}
	}
	return out
}

// DirectImports returns every import of path, its tests' included, sorted
// and without duplicates.
func (g Graph) DirectImports(path string) []string {
	p := g[path]
	if p == nil {
		return nil
	}
	all := slices.Concat(p.Imports, p.TestImports, p.XTestImports)
	slices.Sort(all)
	return slices.Compact(all)
}
