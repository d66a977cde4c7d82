package engine

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/pith-dev/pith/core/session"
	"github.com/pith-dev/pith/core/workspace"
	"github.com/pith-dev/pith/store/files"
)

// session.compacting tells plugins the session's workspace only when the
// Opener in force lets the host read it: a plugin reading project files
// is held to the host's rule (a daemon's server.workspaceRoot), not to the
// header's cwd, which a daemon's client chose.
func TestCompactingNamesTheWorkspace(t *testing.T) {
	cwd := t.TempDir()
	for _, tc := range []struct {
		name string
		open workspace.Opener
		want string
	}{
		{"a user's own session", nil, cwd},
		{"a daemon without a workspace root", workspace.None, ""},
		{"a daemon whose root holds it", workspace.Within(filepath.Dir(cwd)), cwd},
		{"a daemon whose root does not", workspace.Within(t.TempDir()), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := files.Create(filepath.Join(t.TempDir(), "s.jsonl"), cwd, files.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			for i := range 8 {
				for _, m := range []json.RawMessage{userMsg(prose(i, 400)), assistantMsg(prose(i, 600), 1000+i*10, 50)} {
					if _, err := st.Append(session.Draft{Type: session.TypeMessage, Fields: json.RawMessage(`{"message":` + string(m) + `}`)}); err != nil {
						t.Fatal(err)
					}
				}
			}
			h := &fakeHooks{}
			s := New(st, Options{Settings: testSettings(), Summarizer: newScript(), Hooks: h, Workspaces: tc.open})
			if _, err := s.Compact(context.Background(), ""); err != nil {
				t.Fatal(err)
			}
			if len(h.compacting) != 1 || h.compacting[0].Workspace != tc.want {
				t.Fatalf("session.compacting events %+v, want one naming workspace %q", h.compacting, tc.want)
			}
		})
	}
}
