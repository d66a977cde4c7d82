//go:build unix

package server

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pith-dev/pith/core/compaction"
	"github.com/pith-dev/pith/internal/regularfile"
	"github.com/pith-dev/pith/internal/regularfile/regularfiletest"
)

// TestViewerRefusesNonRegular: a FIFO, a directory or a device where the
// viewer expects a session, or the archive of one, is refused with
// ErrNotRegular and never waited on — through the viewer's Source and
// through HTTP.
func TestViewerRefusesNonRegular(t *testing.T) {
	dir := t.TempDir()
	h := startServer(t, testConfig(dir))
	v := h.srv.NewViewer(false)
	hs := httptest.NewServer(v)
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
		v.Close()
	})
	c := &http.Client{Timeout: time.Minute} // a safety net against a hang
	ctx := context.Background()
	s, err := h.client.Create(ctx, "ok.jsonl", "/w")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendMessages(ctx, userMsg("hello", 20)); err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(dir, "ok.jsonl"+compaction.ArchiveSuffix)
	for _, kind := range regularfiletest.Kinds {
		t.Run(kind, func(t *testing.T) {
			name := kind + ".jsonl"
			if ok, err := regularfiletest.Make(kind, filepath.Join(dir, name)); err != nil {
				t.Fatal(err)
			} else if !ok {
				t.Skipf("cannot make a %s here", kind)
			}
			err := regularfiletest.NoHang(t, "the session", func() error {
				src, err := v.resolve(name)
				if err != nil {
					return err
				}
				_, _, err = src.Tail(0)
				return err
			})
			if !errors.Is(err, regularfile.ErrNotRegular) {
				t.Errorf("a %s as the session: %v", kind, err)
			}

			if _, err := regularfiletest.Make(kind, archive); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(archive) })
			err = regularfiletest.NoHang(t, "the archive", func() error {
				src, err := v.resolve("ok.jsonl")
				if err != nil {
					return err
				}
				f, err := src.OpenArchive()
				if err == nil {
					f.Close()
				}
				return err
			})
			if !errors.Is(err, regularfile.ErrNotRegular) {
				t.Errorf("a %s as the archive: %v", kind, err)
			}

			// Through HTTP: the refused session is not found (the viewer
			// says no more to a browser), the session with the odd archive
			// is shown without its archive.
			for _, u := range []struct {
				name string
				ok   bool
			}{{name, false}, {"ok.jsonl", true}} {
				resp, err := c.Get(hs.URL + "/s/" + u.name + "/api/session")
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if (resp.StatusCode == http.StatusOK) != u.ok {
					t.Errorf("%s with a %s: HTTP %d", u.name, kind, resp.StatusCode)
				}
			}
		})
	}
}
