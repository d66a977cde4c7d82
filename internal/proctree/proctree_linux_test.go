package proctree

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestChildrenListsMatchScan: the children lists and the full /proc scan
// find the same descendants, including one that left the process group
// with setsid and a grandchild.
func TestChildrenListsMatchScan(t *testing.T) {
	if !haveChildrenLists() {
		t.Skip("SKIP: this kernel has no /proc/<pid>/task/<tid>/children (CONFIG_PROC_CHILDREN)")
	}
	cmd := exec.Command("sh", "-c", "sleep 60 & setsid sleep 60 & sh -c 'sleep 60 & wait' & echo ready; wait")
	cmd.SysProcAttr = SysProcAttr()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	t.Cleanup(func() { Kill(pid, Descendants(pid)); _ = cmd.Wait() })
	buf := make([]byte, 6)
	if _, err := out.Read(buf); err != nil || !strings.HasPrefix(string(buf), "ready") {
		t.Fatalf("child said %q, %v", buf, err)
	}
	// The children are forked before "ready"; the grandchild may still be
	// on its way: poll until both ways agree on four.
	deadline := time.Now().Add(10 * time.Second)
	for {
		fast := walk(pid, childrenOf)
		slow := walk(pid, scanChildren())
		slices.Sort(fast)
		slices.Sort(slow)
		if len(fast) == 4 && slices.Equal(fast, slow) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("children lists found %v, the scan %v; want the same four", fast, slow)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func BenchmarkDescendants(b *testing.B) {
	self := os.Getpid()
	b.Run("children-lists", func(b *testing.B) {
		for b.Loop() {
			walk(self, childrenOf)
		}
	})
	b.Run("scan", func(b *testing.B) {
		for b.Loop() {
			walk(self, scanChildren())
		}
	})
}
