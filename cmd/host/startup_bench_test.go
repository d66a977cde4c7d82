package main

import (
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// buildTags are the tags make build links pith and the plugins with; the
// process benchmarks build the same binaries a user runs.
const buildTags = "netgo,osusergo,grpcnotrace"

// buildPith builds bin/pith as make build does, into dir.
func buildPith(b *testing.B, dir string) string {
	b.Helper()
	pith := filepath.Join(dir, "pith")
	if out, err := exec.Command("go", "build", "-tags", buildTags, "-o", pith, ".").CombinedOutput(); err != nil {
		b.Fatalf("build pith: %v\n%s", err, out)
	}
	return pith
}

// BenchmarkVersionProcess is `pith --version` as a whole process: the
// start-up every command pays before it does anything (runtime, package
// initialisation, the command tree). It reports the process's CPU time
// (user and system) per run beside the wall time.
func BenchmarkVersionProcess(b *testing.B) {
	pith := buildPith(b, b.TempDir())
	var cpu time.Duration
	for b.Loop() {
		cmd := exec.Command(pith, "--version")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("pith --version: %v\n%s", err, out)
		}
		cpu += childCPU(cmd)
	}
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
}

// childCPU is the CPU time of a finished command: on Linux its rusage
// includes the children it reaped (a command's plugins).
func childCPU(cmd *exec.Cmd) time.Duration {
	return cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
}
