package sdk_test

import (
	"os"
	"strings"
	"testing"
)

// TestReadmePluginIsTheExample keeps example_test.go the README's plugin,
// so the plugin a new author copies is compiled with every test run.
func TestReadmePluginIsTheExample(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	example, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := exampleBody(string(example)), readmeAsExample(string(readme)); got != want {
		t.Errorf("example_test.go is not the README's first Go block; write it as:\n%s", want)
	}
}

// readmeAsExample turns the README's first Go block into an example file's
// body: package sdk_test, main renamed to an Example function.
func readmeAsExample(readme string) string {
	_, block, ok := strings.Cut(readme, "```go\n")
	if !ok {
		return ""
	}
	block, _, _ = strings.Cut(block, "```")
	block = strings.Replace(block, "package main\n", "package sdk_test\n", 1)
	return strings.Replace(block, "func main() {", "func Example() {", 1)
}

// exampleBody drops the comment above the package clause.
func exampleBody(src string) string {
	if i := strings.Index(src, "package sdk_test\n"); i >= 0 {
		return src[i:]
	}
	return src
}
