//go:build unix

package main

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"syscall"
	"testing"
	"time"

	"github.com/pith-dev/pith/sdk"
	"github.com/pith-dev/pith/sdk/sdktest"
)

// TestInstructionFilesThatAreNotRegular: the project directory is the
// repository's, so an AGENTS.md can be a FIFO (an open of which waits for a
// writer that never comes) and a CLAUDE.md a link to a device that never
// ends. Neither holds the handler up: both are skipped as unreadable, and a
// regular file given with them is still kept.
func TestInstructionFilesThatAreNotRegular(t *testing.T) {
	project := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(project, "AGENTS.md"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(project, "CLAUDE.md")); err != nil {
		t.Fatal(err)
	}
	rules := filepath.Join(t.TempDir(), "rules.md")
	write(t, rules, "- keep it short\n")
	for _, k := range []*keeper{
		{dir: project},
		{files: []string{filepath.Join(project, "AGENTS.md"), filepath.Join(project, "CLAUDE.md"), rules}},
	} {
		k.maxLines, k.maxChars = 60, 300
		h := sdktest.InProcess(t, k)
		done := make(chan *sdk.CompactingResult, 1)
		go func() {
			res, err := h.Compacting(context.Background(), &sdk.CompactingEvent{SessionID: "s1", Reason: sdk.ReasonManual})
			if err != nil {
				t.Error(err)
			}
			done <- res
		}()
		var res *sdk.CompactingResult
		select {
		case res = <-done:
		case <-time.After(time.Minute): // a safety net, not a measurement
			t.Fatal("the handler is stuck on an instruction file that is not a regular file")
		}
		var want []string
		if len(k.files) > 0 {
			want = []string{"Standing project instructions from " + rules + " (still in force after this compaction; keep them in the summary):", "- keep it short"}
		}
		var got []string
		if res != nil {
			got = res.Context
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("context\n got %q\nwant %q", got, want)
		}
	}
}
