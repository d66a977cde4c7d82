//go:build unix

package workspace

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pith-dev/pith/internal/regularfile/regularfiletest"
)

// TestReadRefusesNonRegular: a FIFO, a directory or a device in the
// workspace — named directly or through a symlink inside it — is refused
// with ErrNotRegular at once. A plain open of the FIFO would wait for a
// writer, and the compaction rereading the session's files with it.
func TestReadRefusesNonRegular(t *testing.T) {
	for _, kind := range regularfiletest.Kinds {
		t.Run(kind, func(t *testing.T) {
			w, dir := newWorkspace(t, map[string]string{"ok.go": "package ok\n"})
			regularfiletest.MustMake(t, kind, filepath.Join(dir, "odd"))
			if err := os.Symlink("odd", filepath.Join(dir, "link")); err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{"odd", "link"} {
				err := regularfiletest.NoHang(t, "Read "+name, func() error {
					_, err := w.Read(name, ReadOptions{})
					return err
				})
				if !errors.Is(err, ErrNotRegular) || !strings.HasPrefix(err.Error(), name+": not a regular file") {
					t.Errorf("Read(%s) of a %s: %v", name, kind, err)
				}
			}
			// The rehydration after a compaction lists it as not included.
			var built *Built
			regularfiletest.NoHang(t, "BuildMessage", func() error {
				built = w.BuildMessage([]string{"odd", "ok.go"}, nil, BuildOptions{BudgetTokens: 1000})
				return nil
			})
			if len(built.Files) != 2 || built.Files[0].Included || built.Files[0].Reason != ErrNotRegular.Error() || !built.Files[1].Included {
				t.Fatalf("files %+v", built.Files)
			}
		})
	}
}
