package proctree

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// SysProcAttr starts a child as the leader of a new process group, and asks
// the kernel to send it SIGTERM when the host dies: the SDK answers SIGTERM
// by ending its whole tree, which a SIGKILL would not let it do.
func SysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}

// Descendants returns the pids of every live process descended from pid,
// found through the parent links in /proc. A process that exits meanwhile
// is simply missing from the answer. A pid ≤ 0 has none (pid 0 would be
// every process's ancestor).
//
// It follows each process's children lists (/proc/<pid>/task/<tid>/children),
// which reads a few files per descendant, and scans every process's stat
// only on kernels built without them: a host stopping five plugins on a
// machine with a few hundred processes spent more on that scan than on
// anything else of the stop.
func Descendants(pid int) []int {
	if pid <= 0 {
		return nil
	}
	if haveChildrenLists() {
		return walk(pid, childrenOf)
	}
	return walk(pid, scanChildren())
}

// walk lists pid's descendants breadth first, given each process's children.
func walk(pid int, children func(int) []int) []int {
	var out []int
	queue := []int{pid}
	seen := map[int]bool{pid: true}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children(p) {
			if !seen[c] {
				seen[c] = true
				out = append(out, c)
				queue = append(queue, c)
			}
		}
	}
	return out
}

// haveChildrenLists reports whether the kernel has the children files
// (CONFIG_PROC_CHILDREN), judged once by this process's own.
var haveChildrenLists = sync.OnceValue(func() bool {
	self := strconv.Itoa(os.Getpid())
	_, err := os.Stat("/proc/" + self + "/task/" + self + "/children")
	return err == nil
})

// childrenOf reads pid's children from each of its threads' children list
// (a child belongs to the thread that forked it); none when pid is gone.
func childrenOf(pid int) []int {
	dir := "/proc/" + strconv.Itoa(pid) + "/task/"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []int
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		out = append(out, threadChildren(pid, tid)...)
	}
	return out
}

// threadChildren reads the children list of thread tid of process pid.
func threadChildren(pid, tid int) []int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(tid) + "/children")
	if err != nil {
		return nil
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if c, err := strconv.Atoi(f); err == nil {
			out = append(out, c)
		}
	}
	return out
}

// scanChildren reads every process's parent from its stat and returns the
// children map as a function.
func scanChildren() func(int) []int {
	dir, err := os.Open("/proc")
	if err != nil {
		return func(int) []int { return nil }
	}
	names, err := dir.Readdirnames(-1)
	dir.Close()
	if err != nil {
		return func(int) []int { return nil }
	}
	children := map[int][]int{}
	for _, name := range names {
		p, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		if ppid, ok := parentOf(p); ok {
			children[ppid] = append(children[ppid], p)
		}
	}
	return func(p int) []int { return children[p] }
}

// parentOf reads the parent pid from /proc/<pid>/stat. The command name is
// in parentheses and may itself contain spaces and parentheses, so the
// fields are counted from the last ')'.
func parentOf(pid int) (int, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0, false
	}
	ppid, err := strconv.Atoi(f[1])
	return ppid, err == nil
}
