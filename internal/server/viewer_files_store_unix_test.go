//go:build unix

package server

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/pith-dev/pith/store/files"
	"github.com/pith-dev/pith/store/storetest"
)

// TestViewerFilesStoreCatchUpUnread: behind `pith serve --store
// file:DIR`, a session file another program grew by gigabytes is refused
// by the viewer's next catch-up from the file's size, before it is read.
func TestViewerFilesStoreCatchUpUnread(t *testing.T) {
	dir := t.TempDir()
	st, err := files.OpenStore(dir, files.Options{})
	if err != nil {
		t.Fatal(err)
	}
	h := startHarness(t, testConfig(t.TempDir()), st, nil, func() { st.Close() })
	ctx := context.Background()
	const name = "team-a/grown.jsonl"
	s, err := h.client.Create(ctx, name, "/w")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendMessages(ctx, userMsg("first", 20)); err != nil {
		t.Fatal(err)
	}
	v := h.srv.NewViewer(false)
	defer v.Close()
	src, err := v.resolveStored(name)
	if err != nil {
		t.Fatal(err)
	}
	_, n, err := src.Tail(0)
	if err != nil {
		t.Fatal(err)
	}
	storetest.GrowSparse(t, filepath.Join(dir, name), 4<<30)
	used := storetest.Allocated(func() { _, _, err = src.Tail(n) })
	if !errors.Is(err, ErrLimit) {
		t.Fatalf("a catch-up with a file grown to 4 GiB: %v, want ErrLimit", err)
	}
	if used > 64<<20 {
		t.Fatalf("refusing it allocated %d bytes", used)
	}
}
