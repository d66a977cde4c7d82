package archtest

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// repoRoot is the module's root, seen from this package's directory.
const repoRoot = "../.."

var (
	sectionRef     = regexp.MustCompile(`§(\d+(?:\.\d+)?)`)
	sectionHeading = regexp.MustCompile(`(?m)^#{2,3} §(\d+(?:\.\d+)?)\s`)
)

// behaviourSections returns the section numbers docs/behaviour.md has a
// heading for: "5" for "## §5 …", "5.3" for "### §5.3 …".
func behaviourSections(t *testing.T) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, "docs", "behaviour.md"))
	if err != nil {
		t.Fatal(err)
	}
	sections := map[string]bool{}
	for _, m := range sectionHeading.FindAllStringSubmatch(string(data), -1) {
		sections[m[1]] = true
	}
	return sections
}

// TestSectionReferencesResolve: code, help texts and documents cite
// docs/behaviour.md as §N or §N.M; each must name a heading there, so a
// reader who follows one finds the text it means.
func TestSectionReferencesResolve(t *testing.T) {
	sections := behaviourSections(t)
	if len(sections) < 17 {
		t.Fatalf("docs/behaviour.md has only %d section headings", len(sections))
	}
	checked := 0
	err := filepath.WalkDir(repoRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "node_modules", "bin", "testdata":
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(path) {
		case ".go", ".md", ".proto":
		default:
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(data), "\n") {
			for _, m := range sectionRef.FindAllStringSubmatch(line, -1) {
				checked++
				if !sections[m[1]] {
					rel, _ := filepath.Rel(repoRoot, path)
					t.Errorf("%s:%d: §%s is not a heading of docs/behaviour.md", rel, i+1, m[1])
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked == 0 {
		t.Fatal("no § reference found: the scan is broken")
	}
}

var markdownLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestGuideLinksResolve: every relative link of README.md and the guide
// under docs/ leads to a file of the repository, so a reader walking from
// the README never reaches a dead end.
func TestGuideLinksResolve(t *testing.T) {
	pages, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages = append(pages, filepath.Join(repoRoot, "README.md"))
	for _, page := range pages {
		data, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range markdownLink.FindAllStringSubmatch(string(data), -1) {
			target, _, _ := strings.Cut(m[1], "#")
			if target == "" || strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(page), target)); err != nil {
				rel, _ := filepath.Rel(repoRoot, page)
				t.Errorf("%s links to %s, which does not exist", rel, m[1])
			}
		}
	}
}

// TestReadmeCommandsAreWhatCIRuns: the README's first block gives the two
// commands a newcomer runs, make demo and make test; the Makefile must
// have both and CI must run that same test command, so the README never
// promises a run CI does not make.
func TestReadmeCommandsAreWhatCIRuns(t *testing.T) {
	read := func(name string) string {
		data, err := os.ReadFile(filepath.Join(repoRoot, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	readme, makefile, ci := read("README.md"), read("Makefile"), read(".ci/run")
	_, block, ok := strings.Cut(readme, "```sh\n")
	if !ok {
		t.Fatal("README.md has no sh block")
	}
	block, _, _ = strings.Cut(block, "```")
	var commands []string
	for _, line := range strings.Split(block, "\n") {
		if cmd, _, _ := strings.Cut(line, "#"); strings.TrimSpace(cmd) != "" {
			commands = append(commands, strings.TrimSpace(cmd))
		}
	}
	if strings.Join(commands, ";") != "make demo;make test" {
		t.Fatalf("README.md's first block runs %q, want make demo and make test", commands)
	}
	for _, target := range []string{"demo", "test"} {
		if !regexp.MustCompile(`(?m)^` + target + `:`).MatchString(makefile) {
			t.Errorf("the Makefile has no %s target", target)
		}
	}
	lines := strings.Split(strings.TrimSpace(ci), "\n")
	if last := strings.TrimSpace(lines[len(lines)-1]); last != "make test" {
		t.Errorf(".ci/run ends with %q, not the README's make test", last)
	}
}
