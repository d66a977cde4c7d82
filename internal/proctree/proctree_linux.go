package proctree

import (
	"os"
	"strconv"
	"strings"
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
func Descendants(pid int) []int {
	if pid <= 0 {
		return nil
	}
	dir, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	names, err := dir.Readdirnames(-1)
	dir.Close()
	if err != nil {
		return nil
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
	var out []int
	queue := []int{pid}
	seen := map[int]bool{pid: true}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			if !seen[c] {
				seen[c] = true
				out = append(out, c)
				queue = append(queue, c)
			}
		}
	}
	return out
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
