package main

import (
	"bytes"
	"os"
	"testing"
)

// TestConfigReferenceIsCurrent fails when docs/config.md is not what the
// generator writes from today's schema, defaults and example comments.
func TestConfigReferenceIsCurrent(t *testing.T) {
	example, err := os.ReadFile("../../examples/pith.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want, err := render(example)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../../../docs/config.md")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("docs/config.md is stale: run `go run ./config/cmd/gendocs > docs/config.md` at the repository root")
	}
}

// TestEveryKeyIsExplained: a key added to the schema needs a comment in
// config/examples/pith.yaml (or a line in missing) before it reaches the
// reference.
func TestEveryKeyIsExplained(t *testing.T) {
	example, err := os.ReadFile("../../examples/pith.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ks, err := keys(example)
	if err != nil {
		t.Fatal(err)
	}
	if len(ks) < 100 {
		t.Fatalf("only %d keys found: the schema walk is broken", len(ks))
	}
	for _, k := range ks {
		if k.meaning == "" && k.typ != "list of entries" {
			t.Errorf("%s has no meaning: comment it in config/examples/pith.yaml", k.path)
		}
	}
}
