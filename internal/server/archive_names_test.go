package server

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pith-dev/pith/client"
	"github.com/pith-dev/pith/core/compaction"
)

// TestArchiveIsNoSession: NAME.pruned.jsonl beside a session NAME is that
// session's prune archive, as the stores list it, not a session of its
// own. Before, the viewer's index listed every archive as a session, and
// OpenSession created a session in the place of an archive not written
// yet — the next prune of NAME then appended its records into that
// session's file.
func TestArchiveIsNoSession(t *testing.T) {
	h, hs, c := viewerHarness(t)
	ctx := context.Background()
	for _, name := range []string{"x.jsonl", "y.jsonl"} {
		if _, err := c.Create(ctx, name, "/w"); err != nil {
			t.Fatal(err)
		}
	}
	root := h.srv.Config().Sessions.Root
	// x.jsonl was pruned: its archive lies beside it.
	rec := compaction.ArchiveRecord{Pos: 1, ID: "abcd1234", Field: "message.content", PrunedAt: 1700000000000, Original: []byte(`[{"type":"text","text":"out"}]`)}
	if err := os.WriteFile(filepath.Join(root, "x.jsonl"+compaction.ArchiveSuffix), rec.Marshal(), 0o644); err != nil {
		t.Fatal(err)
	}

	code, body := getAuth(t, hs.URL+"/", "admin-secret")
	if code != 200 || !strings.Contains(body, "x.jsonl") {
		t.Fatalf("index: %d\n%s", code, body)
	}
	if strings.Contains(body, "x.jsonl"+compaction.ArchiveSuffix) {
		t.Errorf("the index lists x.jsonl's prune archive as a session:\n%s", body)
	}
	// y.jsonl has no archive yet: its name is still taken.
	_, err := c.Create(ctx, "y.jsonl"+compaction.ArchiveSuffix, "/w")
	if !errors.Is(err, client.ErrInvalidArgument) {
		t.Errorf("creating a session in the place of y.jsonl's archive: %v, want InvalidArgument", err)
	}
	if _, err := os.Stat(filepath.Join(root, "y.jsonl"+compaction.ArchiveSuffix)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a file was created in the place of y.jsonl's archive: %v", err)
	}
	_, err = c.Open(ctx, "x.jsonl"+compaction.ArchiveSuffix)
	if !errors.Is(err, client.ErrInvalidArgument) {
		t.Errorf("opening x.jsonl's archive as a session: %v, want InvalidArgument", err)
	}
	// A lone file with such a name is a session like any other.
	if _, err := c.Create(ctx, "lone"+compaction.ArchiveSuffix, "/w"); err != nil {
		t.Errorf("a lone session named like an archive: %v", err)
	}
}

func getAuth(t *testing.T, u, tok string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}
