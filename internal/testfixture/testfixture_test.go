package testfixture

import (
	"path/filepath"
	"testing"
)

func TestPiDirIsBesideTheRepository(t *testing.T) {
	want, err := filepath.Abs("../../../shared/testdata/pi")
	if err != nil {
		t.Fatal(err)
	}
	if got := PiDir(); got != want {
		t.Fatalf("PiDir() = %s, want %s", got, want)
	}
}

// fakeTB records how Missing ended a test.
type fakeTB struct {
	testing.TB
	skipped, failed bool
}

func (f *fakeTB) Helper()               {}
func (f *fakeTB) Skipf(string, ...any)  { f.skipped = true }
func (f *fakeTB) Fatalf(string, ...any) { f.failed = true }

func TestMissingSkipsOutsideCIAndFailsUnderIt(t *testing.T) {
	for _, ci := range []string{"", "true"} {
		t.Setenv("CI", ci)
		f := &fakeTB{TB: t}
		Missing(f, "no %s", "fixture")
		if f.failed != (ci == "true") || f.skipped == (ci == "true") {
			t.Errorf("CI=%q: skipped %v, failed %v", ci, f.skipped, f.failed)
		}
	}
}
