package proctree

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// envReaperHelper runs this test binary as a subreaping host (a process of
// its own: a subreaper test process would take every test's children).
const envReaperHelper = "PITH_PROCTREE_REAPER_HELPER"

// The subreaping helper's main goroutine keeps the main thread, so that a
// goroutine of its own runs on another.
func init() {
	if os.Getenv(envReaperHelper) != "" {
		runtime.LockOSThread()
	}
}

func TestMain(m *testing.M) {
	if os.Getenv(envReaperHelper) != "" {
		os.Exit(reaperHelper())
	}
	os.Exit(m.Run())
}

// startLeader runs sh -c script, started as a plugin is (its own group), and
// returns it with the first line it prints, a pid.
func startLeader(script string) (*exec.Cmd, int, error) {
	cmd := exec.Command("sh", "-c", script)
	cmd.SysProcAttr = SysProcAttr()
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, 0, err
	}
	if err := Start(cmd); err != nil {
		return nil, 0, err
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		return nil, 0, fmt.Errorf("no pid from %q: %w", script, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	return cmd, pid, err
}

// waitReparented waits until pid is a child of this process.
func waitReparented(pid int) error {
	for range 500 {
		if slices.Contains(childrenOf(os.Getpid()), pid) {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Errorf("%d was never re-parented here", pid)
}

// alive reports whether pid runs (not gone, not a zombie).
func alive(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] != 'Z'
}

// reaperHelper is the subreaping host. It reports what it saw as lines
// "name ok" or "name FAIL why" on stdout, then exits.
func reaperHelper() int {
	report := func(name string, err error) {
		if err != nil {
			fmt.Printf("%s FAIL %v\n", name, err)
		} else {
			fmt.Printf("%s ok\n", name)
		}
	}
	if !Subreap() {
		fmt.Println("subreap SKIP")
		return 0
	}

	// A leader whose helper is double-forked but stays in its group: the
	// helper is re-parented here and is the running leader's, so
	// EndOrphans leaves it; once the leader is stopped, it is ended.
	lead, helper, err := startLeader("(sleep 600 & echo $!) ; exec sleep 600")
	if err == nil {
		err = waitReparented(helper)
	}
	if err == nil {
		EndOrphans()
		if !alive(helper) {
			err = fmt.Errorf("the running leader's helper %d was ended", helper)
		}
	}
	if err == nil {
		Kill(lead.Process.Pid, nil)
		_ = lead.Wait()
		Waited(lead.Process.Pid)
		EndOrphans()
		if alive(helper) {
			err = fmt.Errorf("helper %d outlived its leader", helper)
		}
	}
	report("group-helper", err)

	// A daemon: double-forked into a session of its own. Once here it
	// belongs to no running leader and is ended, whatever runs.
	// Its parent is started from a thread other than the main one (which
	// init locked to the main goroutine): the kernel gives the orphan to
	// the thread group's leader all the same (adoptedChildren).
	keep, _, err := startLeader("echo 0; exec sleep 600")
	var daemon int
	if err == nil {
		var starter *exec.Cmd
		started := make(chan error)
		go func() {
			if unix.Gettid() == os.Getpid() {
				started <- fmt.Errorf("the starter runs on the main thread")
				return
			}
			var err error
			starter, daemon, err = startLeader("setsid sleep 600 </dev/null >/dev/null 2>&1 & echo $!")
			started <- err
		}()
		err = <-started
		if err == nil {
			_ = starter.Wait()
			Waited(starter.Process.Pid)
			err = waitReparented(daemon)
		}
	}
	if err == nil {
		EndOrphans()
		if alive(daemon) {
			err = fmt.Errorf("daemon %d outlived EndOrphans", daemon)
		} else if !alive(keep.Process.Pid) {
			err = fmt.Errorf("EndOrphans ended a leader it did not own")
		}
	}
	report("daemon", err)

	// An orphan that exits by itself is reaped (SIGCHLD), not left a
	// zombie; the running leader is not waited for by the reaper.
	var short int
	var starter *exec.Cmd
	starter, short, err = startLeader("(sleep 0.2 & echo $!)")
	if err == nil {
		_ = starter.Wait()
		Waited(starter.Process.Pid)
		err = fmt.Errorf("orphan %d not reaped", short)
		for range 500 {
			if _, serr := os.Stat(filepath.Join("/proc", strconv.Itoa(short))); os.IsNotExist(serr) {
				err = nil
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if err == nil {
		if kerr := syscall.Kill(keep.Process.Pid, 0); kerr != nil {
			err = fmt.Errorf("the leader was reaped by the reaper: %v", kerr)
		}
	}
	report("zombie", err)

	// An orphan that a kill does not end (one in uninterruptible sleep,
	// stood in for by a wait that never returns) does not hold EndOrphans
	// up past orphanWait; once it ends, the next pass reaps it.
	var stuck int
	starter, stuck, err = startLeader("setsid sleep 600 </dev/null >/dev/null 2>&1 & echo $!")
	if err == nil {
		_ = starter.Wait()
		Waited(starter.Process.Pid)
		err = waitReparented(stuck)
	}
	if err == nil {
		never := make(chan struct{})
		orphanWait, waitOrphan = 200*time.Millisecond, func(*os.Process) { <-never }
		returned := make(chan struct{})
		go func() { EndOrphans(); close(returned) }()
		select {
		case <-returned:
		case <-time.After(60 * time.Second):
			err = fmt.Errorf("EndOrphans still waits for an orphan that does not end")
		}
		orphanWait, waitOrphan = 2*time.Second, func(p *os.Process) { _, _ = p.Wait() }
	}
	if err == nil {
		EndOrphans()
		if alive(stuck) {
			err = fmt.Errorf("orphan %d outlived EndOrphans", stuck)
		}
	}
	report("stuck", err)
	Kill(keep.Process.Pid, nil)
	if werr := keep.Wait(); werr != nil && !strings.Contains(werr.Error(), "killed") {
		report("leader-wait", fmt.Errorf("os/exec could not wait for its own child: %v", werr))
	}
	return 0
}

// TestReaper runs the subreaping host and checks each of its reports.
func TestReaper(t *testing.T) {
	if !haveChildrenLists() {
		t.Skip("SKIP: this kernel has no /proc/<pid>/task/<tid>/children (CONFIG_PROC_CHILDREN)")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envReaperHelper+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	text := string(out)
	if strings.Contains(text, "subreap SKIP") {
		t.Skip("SKIP: PR_SET_CHILD_SUBREAPER refused here")
	}
	for _, name := range []string{"group-helper", "daemon", "zombie", "stuck"} {
		if !strings.Contains(text, name+" ok\n") {
			t.Errorf("%s: want ok; the helper said:\n%s", name, text)
		}
	}
	if strings.Contains(text, "FAIL") {
		t.Errorf("helper:\n%s", text)
	}
}
