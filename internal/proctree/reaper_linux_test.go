package proctree

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
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
	// As the pith command sets it up: subreaping from the first child on.
	SubreapOnFirstStart()
	if Subreaping() {
		report("lazy", errors.New("subreaping before any child was started"))
	}
	first := exec.Command("true")
	if err := Start(first); err != nil {
		report("lazy", err)
		return 0
	}
	_ = first.Wait()
	Waited(first.Process.Pid)
	if !Subreaping() {
		fmt.Println("subreap SKIP")
		return 0
	}
	report("lazy", nil)

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
	// stood in for by a wait that does not return until the test lets it)
	// holds EndOrphans up only until orphanWait, and only once: a later
	// EndOrphans neither kills nor waits for it again. The children of an
	// orphan ended meanwhile, re-parented here after the bound, are ended
	// all the same.
	var stuck, parent, child int
	gfile := filepath.Join(os.TempDir(), fmt.Sprintf("pith-reaper-%d", os.Getpid()))
	defer os.Remove(gfile)
	starter, stuck, err = startLeader("setsid sleep 600 </dev/null >/dev/null 2>&1 & echo $!")
	if err == nil {
		_ = starter.Wait()
		Waited(starter.Process.Pid)
		starter, parent, err = startLeader("setsid sh -c 'sleep 600 & echo $! > " + gfile + "; exec sleep 600' </dev/null >/dev/null 2>&1 & echo $!")
	}
	if err == nil {
		_ = starter.Wait()
		Waited(starter.Process.Pid)
		if err = waitReparented(stuck); err == nil {
			err = waitReparented(parent)
		}
	}
	if err == nil {
		for range 500 {
			if b, rerr := os.ReadFile(gfile); rerr == nil && len(b) > 0 {
				child, err = strconv.Atoi(strings.TrimSpace(string(b)))
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if err == nil && child == 0 {
			err = fmt.Errorf("the orphan's child never said its pid")
		}
	}
	if err == nil {
		release := make(chan struct{})
		var stuckWaits atomic.Int32
		realKill, realWait := killOrphan, waitOrphan
		orphanWait = 200 * time.Millisecond
		killOrphan = func(p *os.Process) error {
			if p.Pid == stuck {
				return nil // signalled, and sleeps on
			}
			return p.Kill()
		}
		waitOrphan = func(p *os.Process) {
			if p.Pid == stuck {
				stuckWaits.Add(1)
				<-release
			}
			_, _ = p.Wait()
		}
		endOrphans := func(call int) {
			returned := make(chan struct{})
			go func() { EndOrphans(); close(returned) }()
			select {
			case <-returned:
			case <-time.After(60 * time.Second):
				err = fmt.Errorf("EndOrphans (call %d) still waits for an orphan that does not end", call)
			}
		}
		endOrphans(1)
		// Past the bound the child is killed but not waited for.
		for i := 0; err == nil && alive(child) && i < 500; i++ {
			time.Sleep(10 * time.Millisecond)
		}
		if err == nil && alive(child) {
			err = fmt.Errorf("the ended orphan's child %d was never ended", child)
		}
		if err == nil {
			endOrphans(2)
		}
		if err == nil && stuckWaits.Load() != 1 {
			err = fmt.Errorf("the orphan that does not end was waited for %d times, want 1", stuckWaits.Load())
		}
		killOrphan, waitOrphan, orphanWait = realKill, realWait, 2*time.Second
		_ = syscall.Kill(stuck, syscall.SIGKILL)
		close(release)
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
	for _, name := range []string{"lazy", "group-helper", "daemon", "zombie", "stuck"} {
		if !strings.Contains(text, name+" ok\n") {
			t.Errorf("%s: want ok; the helper said:\n%s", name, text)
		}
	}
	if strings.Contains(text, "FAIL") {
		t.Errorf("helper:\n%s", text)
	}
}
