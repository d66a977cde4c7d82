package archtest

import (
	"context"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestSurfaceLeaks runs the walker on testdata/leaky, a module of its own
// whose api package hands out an internal package's types in each way a Go
// API can.
func TestSurfaceLeaks(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed: %v", err)
	}
	leaks, err := SurfaceLeaks(context.Background(), goBin, "testdata/leaky", []string{"leaky/internal/..."}, "leaky/...")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"leaky/api.Alias exposes leaky/internal/secret.Conn",
		"leaky/api.Box exposes leaky/internal/secret.Conn",
		"leaky/api.Client.Use exposes leaky/internal/secret.Opt",
		"leaky/api.Config exposes leaky/internal/secret.Opt",
		"leaky/api.Dial exposes leaky/internal/secret.Conn",
		"leaky/api.List exposes leaky/internal/secret.Opt",
		"leaky/api.Open exposes leaky/internal/secret.Conn",
	}
	if !slices.Equal(leaks, want) {
		t.Errorf("leaks:\n%s\nwant:\n%s", strings.Join(leaks, "\n"), strings.Join(want, "\n"))
	}
}
