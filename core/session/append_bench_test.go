package session_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/pith-dev/pith/core/session"
)

// benchAppend appends one small entry per op to a 1000-entry session in
// dir, through the whole write protocol: lock, check the inode, catch up,
// write, fsync (on tmpfs the fsync costs nothing).
func benchAppend(b *testing.B, dir string, opts session.Options) {
	path := filepath.Join(dir, "append.jsonl")
	s, err := session.Create(path, "/w", opts)
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
	b.Run("disk", func(b *testing.B) { benchAppend(b, b.TempDir(), session.Options{}) })
	b.Run("tmpfs", func(b *testing.B) {
		dir, err := os.MkdirTemp("/dev/shm", "pith-bench-")
		if err != nil {
			b.Skip("no /dev/shm")
		}
		defer os.RemoveAll(dir)
		benchAppend(b, dir, session.Options{})
	})
	b.Run("nosync", func(b *testing.B) {
		benchAppend(b, b.TempDir(), session.Options{WrapFS: func(f session.FS) session.FS { return noSyncFS{f} }})
	})
}

// noSyncFS is an FS whose fsyncs do nothing, to measure appends without them.
type noSyncFS struct{ session.FS }

func (f noSyncFS) OpenFile(name string, flag int, perm os.FileMode) (session.Handle, error) {
	h, err := f.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return noSyncHandle{h}, nil
}

func (noSyncFS) SyncDir() error { return nil }

type noSyncHandle struct{ session.Handle }

func (noSyncHandle) Sync() error { return nil }
