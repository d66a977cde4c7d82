package archtest

import (
	"fmt"
	"slices"
	"strings"
)

// DepRule forbids every package matching From to depend, directly or
// not, on a package matching any of Forbid. Only non-test imports count:
// the rule is about what a binary links.
type DepRule struct {
	Name   string
	From   []string
	Forbid []string
}

// Check returns one line per violating package, naming the import chain,
// and the packages checked. Patterns in From that match nothing (packages
// not written yet) are skipped.
func (r DepRule) Check(g Graph) (violations, checked []string) {
	for _, root := range g.Select(r.From...) {
		checked = append(checked, root)
		if chain := g.FindDep(root, r.Forbid...); chain != nil {
			violations = append(violations, fmt.Sprintf("%s depends on %s: %s",
				root, chain[len(chain)-1], strings.Join(chain, " → ")))
		}
	}
	return violations, checked
}

// ImportRule allows only the packages matching AllowedBy to import a
// package matching Target directly, tests included. A package matching
// Target may import its own kind (generated code split over packages).
type ImportRule struct {
	Name      string
	Target    []string
	AllowedBy []string
}

// Check returns one line per forbidden import, scanning the packages of g
// matching Scope (the module's own).
func (r ImportRule) Check(g Graph, scope ...string) []string {
	var violations []string
	for _, path := range g.Select(scope...) {
		if matchAny(r.AllowedBy, path) || matchAny(r.Target, path) {
			continue
		}
		for _, imp := range g.DirectImports(path) {
			if matchAny(r.Target, imp) {
				violations = append(violations, fmt.Sprintf("%s imports %s", path, imp))
			}
		}
	}
	return violations
}

// NoImportOfTree forbids the packages of g matching scope to import
// anything under tree (e.g. module/cmd/...), tests included, except
// packages inside the same top directory below tree: cmd/host may import
// cmd/host/internal, but nothing else may import cmd/host.
func NoImportOfTree(g Graph, tree string, scope ...string) []string {
	prefix := strings.TrimSuffix(tree, "/...") + "/"
	var violations []string
	for _, path := range g.Select(scope...) {
		for _, imp := range g.DirectImports(path) {
			rest, ok := strings.CutPrefix(imp, prefix)
			if !ok {
				continue
			}
			top := prefix + strings.SplitN(rest, "/", 2)[0]
			if Match(top+"/...", path) {
				continue
			}
			violations = append(violations, fmt.Sprintf("%s imports %s", path, imp))
		}
	}
	return violations
}

func matchAny(patterns []string, path string) bool {
	return slices.ContainsFunc(patterns, func(p string) bool { return Match(p, path) })
}
