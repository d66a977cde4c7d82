package archtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// packageLine is a line of docs/architecture.md's package list:
// "- `path` — what it is for", with "*target*" for a package of the
// target layout not written yet.
var packageLine = regexp.MustCompile("(?m)^- `([a-z0-9_./-]+)` — (.*)$")

// TestArchitectureListsEveryPackage keeps docs/architecture.md's package
// list true: every package of the module has a line, and every line names
// a package that exists, unless it is marked as the target layout.
func TestArchitectureListsEveryPackage(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repoRoot, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{} // path → marked *target*
	for _, m := range packageLine.FindAllStringSubmatch(string(data), -1) {
		listed[m[1]] = strings.HasPrefix(m[2], "*target*")
	}
	cmd := exec.Command("go", "list", "./...")
	cmd.Dir = repoRoot
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	exists := map[string]bool{}
	for _, p := range strings.Fields(string(out)) {
		rel := strings.TrimPrefix(strings.TrimPrefix(p, module), "/")
		exists[rel] = true
		if _, ok := listed[rel]; !ok {
			t.Errorf("docs/architecture.md has no line for %s: add \"- `%s` — what it is for\"", rel, rel)
		}
	}
	for path, target := range listed {
		if !exists[path] && !target {
			t.Errorf("docs/architecture.md lists %s, which is not a package (mark it *target* if it is to come)", path)
		}
	}
}
