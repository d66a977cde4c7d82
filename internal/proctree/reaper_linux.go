package proctree

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The reaper contains what a plugin leaves behind by a double fork: a
// process that left the plugin's process group (setsid) and whose parent
// then exited. Such a process is re-parented to the nearest ancestor that
// is a child subreaper, or to init, where the descendants walk no longer
// finds it. A host that calls Subreap is that ancestor: the orphan becomes
// its child, and EndOrphans ends it.
//
// Every child of a subreaping host is then one of two kinds: a process it
// started itself with Start (a plugin, which os/exec waits for), or an
// orphan re-parented to it. The registry of the first kind tells them
// apart; Start registers a process under the same lock the reaping takes,
// so that no reaping can see an unregistered child of the host's own and
// take its exit status from os/exec.
var reaper struct {
	on atomic.Bool
	// lazy: SubreapOnFirstStart was called, and Start calls Subreap
	// (once) before the first child it starts.
	lazy atomic.Bool
	once sync.Once
	mu   sync.Mutex
	// started counts the live processes started with Start, by pid (a
	// count: a pid can be reused by a new start before the old one's
	// Waited).
	started map[int]int
	// reaping holds the orphans EndOrphans killed and waits for, each with
	// a channel closed once it is reaped: a later pass or another
	// EndOrphans waits on that instead of killing and waiting again (an
	// orphan a kill does not end would cost every later stop the whole
	// bound, and a goroutine).
	reaping map[int]*reaping
}

// reaping is an orphan EndOrphans killed: done is closed once it is
// reaped; by is when the EndOrphans that killed it stopped waiting.
type reaping struct {
	done chan struct{}
	by   time.Time
}

// Subreap makes this process a child subreaper, so that the orphans of its
// plugins are re-parented to it, and reaps those that exit by themselves
// (a re-parented process that exits stays a zombie until its parent waits
// for it). It reports whether it did. Call it once, from main, before any
// child is started (or SubreapOnFirstStart), and only in a program all of
// whose children are started with Start: any other child would be taken
// for an orphan.
func Subreap() bool {
	if reaper.on.Load() {
		return true
	}
	if !haveChildrenLists() {
		// Orphans are found through this process's children lists;
		// without them the host keeps walking each plugin's descendants
		// before it kills them, as where there is no subreaper.
		return false
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return false
	}
	reaper.mu.Lock()
	reaper.started = map[int]int{}
	reaper.reaping = map[int]*reaping{}
	reaper.mu.Unlock()
	reaper.on.Store(true)
	chld := make(chan os.Signal, 1)
	signal.Notify(chld, syscall.SIGCHLD)
	go func() {
		for range chld {
			// Reaping an orphan that exited by itself is not urgent (it
			// only frees its process table entry), and every pass reads
			// the children lists of all of this process's threads. Exits
			// come in bursts — a command stopping its plugins, whose
			// stops reap what EndOrphans kills — so one pass a little
			// after the first covers the burst, instead of one per exit
			// contending with the stops for the lock.
			time.Sleep(reapDelay)
			select {
			case <-chld: // covered by this pass
			default:
			}
			reapExitedOrphans()
		}
	}()
	return true
}

// adoptedChildren lists this process's children where orphans re-parented
// to it are: since Linux 3.19 the kernel gives them to the thread group's
// leader (the first of its threads still alive, and a Go program's main
// thread never exits), so one children list holds them all; before, to
// the thread that had started their parent, so every thread's list is
// read. Processes the host started itself are in their starting thread's
// list either way, and skipped by the caller.
func adoptedChildren() []int {
	self := os.Getpid()
	if leaderAdopts() {
		return threadChildren(self, self)
	}
	return childrenOf(self)
}

// leaderAdopts reports whether the kernel re-parents orphans to a
// subreaper's thread group leader (Linux 3.19, find_alive_thread).
var leaderAdopts = sync.OnceValue(func() bool {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return false
	}
	var major, minor int
	if _, err := fmt.Sscanf(unix.ByteSliceToString(u.Release[:]), "%d.%d", &major, &minor); err != nil {
		return false
	}
	return major > 3 || major == 3 && minor >= 19
})

// reapDelay is how long after a SIGCHLD the reaper looks for exited
// orphans.
const reapDelay = 100 * time.Millisecond

// SubreapOnFirstStart is Subreap, put off until Start starts the first
// child: a command that starts no plugin (pith --version, pith context)
// does not pay for the prctl, the SIGCHLD handler and the goroutine that
// reaps. The rule of Subreap holds from the call on: every child of the
// program is started with Start. Call it from main.
func SubreapOnFirstStart() { reaper.lazy.Store(true) }

// Subreaping reports whether Subreap made this process a subreaper.
func Subreaping() bool { return reaper.on.Load() }

// Start starts cmd, registered as a process the caller waits for itself;
// call Waited with its pid once cmd.Wait has returned.
func Start(cmd *exec.Cmd) error {
	if reaper.lazy.Load() && !reaper.on.Load() {
		reaper.once.Do(func() { Subreap() })
	}
	if !reaper.on.Load() {
		return cmd.Start()
	}
	reaper.mu.Lock()
	defer reaper.mu.Unlock()
	if err := cmd.Start(); err != nil {
		return err
	}
	reaper.started[cmd.Process.Pid]++
	return nil
}

// Waited records that the process pid, started with Start, has been
// waited for.
func Waited(pid int) {
	if !reaper.on.Load() {
		return
	}
	reaper.mu.Lock()
	defer reaper.mu.Unlock()
	if reaper.started[pid] <= 1 {
		delete(reaper.started, pid)
	} else {
		reaper.started[pid]--
	}
}

// orphansLocked lists the children of this process it did not start; with
// inGroups false, not those in the process group of one it started and
// still runs: a plugin's helper still in its group is the plugin's, and
// ends with it.
func orphansLocked(inGroups bool) []int {
	var out []int
	for _, pid := range adoptedChildren() {
		if reaper.started[pid] > 0 {
			continue
		}
		if !inGroups {
			if pgid, err := syscall.Getpgid(pid); err == nil && reaper.started[pgid] > 0 {
				continue
			}
		}
		out = append(out, pid)
	}
	return out
}

// EndOrphans ends and reaps the orphans re-parented to this process —
// those of a plugin just stopped, and any a running plugin left outside
// its process group — until none is left (ending one re-parents its own
// children here). It waits at most orphanWait for them to end; past it,
// it still ends the orphans that keep coming (the children of the ones it
// ended), without waiting for them. It does nothing unless Subreap made
// this process a subreaper.
func EndOrphans() {
	if !reaper.on.Load() {
		return
	}
	by := time.Now().Add(orphanWait)
	for {
		fresh, waits := killOrphans(by)
		if !fresh && len(waits) == 0 {
			return
		}
		if !waitAll(waits) && !fresh {
			return
		}
	}
}

// killOrphans kills the orphans not already being reaped and starts
// reaping them, to be waited for until by; fresh reports whether there
// were any. It returns every orphan being reaped: one killed earlier is
// waited for only until its own by, so one a kill did not end costs only
// the stop that killed it.
func killOrphans(by time.Time) (fresh bool, waits []*reaping) {
	// Killed under the lock, while the orphans are still unreaped children:
	// nothing else reaps them meanwhile, so each pidfd is that process and
	// not a later one with its pid.
	reaper.mu.Lock()
	defer reaper.mu.Unlock()
	for _, pid := range orphansLocked(false) {
		if r, ok := reaper.reaping[pid]; ok {
			waits = append(waits, r)
			continue
		}
		p, err := os.FindProcess(pid)
		if err != nil {
			continue
		}
		if err := killOrphan(p); err != nil {
			// Not ours to kill (a setuid program, say): waiting for it
			// would hold the stop up until it ends by itself; the
			// SIGCHLD pass reaps it then.
			_ = p.Release()
			continue
		}
		// One killed past the bound still gets the moment a kill takes,
		// so that the children it hands over as it dies are there for the
		// next pass.
		r := &reaping{done: make(chan struct{}), by: by}
		if dying := time.Now().Add(dyingWait); dying.After(by) {
			r.by = dying
		}
		reaper.reaping[pid] = r
		waits = append(waits, r)
		fresh = true
		go func() {
			waitOrphan(p)
			_ = p.Release()
			reaper.mu.Lock()
			delete(reaper.reaping, pid)
			reaper.mu.Unlock()
			close(r.done)
		}()
	}
	return fresh, waits
}

// dyingWait is how long EndOrphans waits, past its bound, for an orphan
// it has just killed: a killed process ends within it unless it sleeps
// uninterruptibly.
const dyingWait = 100 * time.Millisecond

// orphanWait bounds how long EndOrphans waits for the orphans it killed.
// A killed process ends at once unless it sleeps uninterruptibly — on I/O
// to a hung network mount, say — where it can stay for any time, and a
// plugin's stop, which calls EndOrphans, must not hang on it. Such an
// orphan is reaped when it ends, by the goroutine left waiting for it.
var orphanWait = 2 * time.Second

// killOrphan and waitOrphan kill and reap one orphan; variables so that a
// test can stand in for an orphan that a kill does not end.
var (
	killOrphan = func(p *os.Process) error { return p.Kill() }
	waitOrphan = func(p *os.Process) {
		_, _ = p.Wait() // an error: reaped on SIGCHLD first
	}
)

// waitAll waits until every orphan of waits is reaped or past its by,
// and reports whether all were reaped.
func waitAll(waits []*reaping) bool {
	all := true
	for _, r := range waits {
		select {
		case <-r.done:
			continue
		default:
		}
		t := time.NewTimer(time.Until(r.by))
		select {
		case <-r.done:
		case <-t.C:
			all = false
		}
		t.Stop()
	}
	return all
}

// reapExitedOrphans reaps the orphans that have exited, whatever their
// group, and leaves running ones alone; it runs on every SIGCHLD.
func reapExitedOrphans() {
	reaper.mu.Lock()
	defer reaper.mu.Unlock()
	for _, pid := range orphansLocked(true) {
		var ws syscall.WaitStatus
		_, _ = syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
	}
}
