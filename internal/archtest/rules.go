package archtest

import (
	"fmt"
	"slices"
	"strings"
)

// DepRule forbids every package matching From, except those matching
// Except, to depend, directly or not, on a package matching any of Forbid.
// Only non-test imports count: the rule is about what a binary links.
type DepRule struct {
	Name   string
	From   []string
	Except []string
	Forbid []string
}

// Check returns one line per violating package, naming the import chain,
// and the packages checked. Patterns in From that match nothing (packages
// not written yet) are skipped.
func (r DepRule) Check(g Graph) (violations, checked []string) {
	for _, root := range g.Select(r.From...) {
		if matchAny(r.Except, root) {
			continue
		}
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

// TestClosureRule forbids the tests of every package matching From, except
// those matching Except, to link a package matching Forbid, directly or
// not. A test binary compiles its whole closure: a core test that pulled
// in a provider SDK would make every `go test` of it (and every cold CI
// run) compile the SDK's generated packages first.
type TestClosureRule struct {
	Name   string
	From   []string
	Except []string
	Forbid []string
}

// Check returns one line per violation, naming the chain, and the
// packages checked. Test-only imports outside the graph (external test
// helpers) are not followed.
func (r TestClosureRule) Check(g Graph) (violations, checked []string) {
	for _, root := range g.Select(r.From...) {
		if matchAny(r.Except, root) {
			continue
		}
		checked = append(checked, root)
		p := g[root]
		starts := append([]string{root}, slices.Concat(p.TestImports, p.XTestImports)...)
		for _, s := range starts {
			chain := []string{s}
			if !matchAny(r.Forbid, s) {
				chain = g.FindDep(s, r.Forbid...)
			}
			if chain != nil {
				if s != root {
					chain = append([]string{root + " (test)"}, chain...)
				}
				violations = append(violations, fmt.Sprintf("tests of %s link %s: %s",
					root, chain[len(chain)-1], strings.Join(chain, " → ")))
				break
			}
		}
	}
	return violations, checked
}
