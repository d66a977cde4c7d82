package files_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/store/files"
)

// benchAppend appends one small entry per op to a 1000-entry session in
// dir, through the whole write protocol: lock, check the inode, catch up,
// write, fsync (on tmpfs the fsync costs nothing).
func benchAppend(b *testing.B, dir string, opts files.Options) {
	path := filepath.Join(dir, "append.jsonl")
	s, err := files.Create(path, "/w", opts)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	fields := map[string]any{"customType": "bench", "data": map[string]any{"text": "a line of about two hundred bytes, like a short pi entry"}}
	for range 1000 {
		if _, err := s.Append(session.Draft{Type: session.TypeCustom, Fields: fields}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	defer reportCPU(b, cpuTime())
	for b.Loop() {
		if _, err := s.Append(session.Draft{Type: session.TypeCustom, Fields: fields}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppend: "disk" fsyncs to the temp directory's file system,
// "tmpfs" to /dev/shm (the protocol's own cost), "nosync" skips fsync.
func BenchmarkAppend(b *testing.B) {
	b.Run("disk", func(b *testing.B) { benchAppend(b, b.TempDir(), files.Options{}) })
	b.Run("tmpfs", func(b *testing.B) {
		dir, err := os.MkdirTemp("/dev/shm", "pith-bench-")
		if err != nil {
			b.Skip("no /dev/shm")
		}
		defer os.RemoveAll(dir)
		benchAppend(b, dir, files.Options{})
	})
	b.Run("nosync", func(b *testing.B) {
		benchAppend(b, b.TempDir(), files.Options{WrapFS: func(f files.FS) files.FS { return noSyncFS{f} }})
	})
}

// noSyncFS is an FS whose fsyncs do nothing, to measure appends without them.
type noSyncFS struct{ files.FS }

func (f noSyncFS) OpenFile(name string, flag int, perm os.FileMode) (files.Handle, error) {
	h, err := f.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return noSyncHandle{h}, nil
}

func (noSyncFS) SyncDir() error { return nil }

type noSyncHandle struct{ files.Handle }

func (noSyncHandle) Sync() error { return nil }

// cpuTime is the process's user+system CPU time. Benchmarks report CPU per
// operation beside wall time because this machine is often shared.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64((cpuTime()-start).Microseconds())/1000/float64(b.N), "cpu-ms/op")
}
