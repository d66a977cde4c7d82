//go:build unix

package files_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/internal/regularfile"
	"github.com/pith-dev/pith/internal/regularfile/regularfiletest"
	"github.com/pith-dev/pith/store/files"
	"github.com/pith-dev/pith/store/storetest"
)

// TestFilesRefuseNonRegular: a FIFO, a directory or a device where the
// files store expects a session, or its archive, is refused by Export,
// Tail and ReadSidecar with ErrNotRegular and never waited on (before,
// a FIFO or a device read as an empty session, and a FIFO put in the
// archive's place between the check and the read blocked ReadSidecar).
func TestFilesRefuseNonRegular(t *testing.T) {
	dir := t.TempDir()
	s, err := files.OpenStore(dir, files.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if err := os.WriteFile(filepath.Join(dir, "ok.jsonl"), []byte(storetest.Sample), 0o644); err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(dir, "ok.jsonl"+session.ArchiveSuffix)
	for _, kind := range regularfiletest.Kinds {
		t.Run(kind, func(t *testing.T) {
			name := kind + ".jsonl"
			regularfiletest.MustMake(t, kind, filepath.Join(dir, name))
			reads := map[string]func() error{
				"Export": func() error { _, err := s.Export(ctx, name); return err },
				"Tail":   func() error { _, _, err := s.Tail(ctx, name, 0); return err },
			}
			for what, read := range reads {
				if err := regularfiletest.NoHang(t, what, read); !errors.Is(err, regularfile.ErrNotRegular) {
					t.Errorf("%s of a %s: %v", what, kind, err)
				}
			}
			regularfiletest.MustMake(t, kind, archive)
			t.Cleanup(func() { os.RemoveAll(archive) })
			err := regularfiletest.NoHang(t, "ReadSidecar", func() error {
				_, err := s.ReadSidecar(ctx, "ok.jsonl", session.ArchiveSuffix)
				return err
			})
			if !errors.Is(err, regularfile.ErrNotRegular) {
				t.Errorf("ReadSidecar of a %s: %v", kind, err)
			}
		})
	}
	// A regular archive, and none, still read as before.
	if err := os.WriteFile(archive, []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if data, err := s.ReadSidecar(ctx, "ok.jsonl", session.ArchiveSuffix); err != nil || string(data) != "x\n" {
		t.Fatalf("%q %v", data, err)
	}
	os.Remove(archive)
	if data, err := s.ReadSidecar(ctx, "ok.jsonl", session.ArchiveSuffix); err != nil || data != nil {
		t.Fatalf("no archive: %q %v", data, err)
	}
}
