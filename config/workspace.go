package config

import (
	"path/filepath"
	"strings"

	"github.com/pith-dev/pith/core/workspace"
)

// WorkspaceRootFor is the directory whose workspaces the session named
// name (relative to sessions.root, or in the store) may read:
// server.workspaceRoot, narrowed for a tenant's session to the directory
// of the same name under it — for the longest token prefix the name is
// under, workspaceRoot/prefix. A tenant chooses the cwd of the sessions
// it creates, and rehydrate and the explore worker read files from it:
// without the narrowing, team-a could name a workspace of team-b's and
// have its files put in team-a's context. "" when workspace reads are
// off (no server.workspaceRoot).
func (s Server) WorkspaceRootFor(name string) string {
	if s.WorkspaceRoot == "" {
		return ""
	}
	tenant := ""
	for _, t := range s.Tokens {
		if t.Prefix != "" && strings.HasPrefix(name, t.Prefix) && len(t.Prefix) > len(tenant) {
			tenant = t.Prefix
		}
	}
	return filepath.Join(s.WorkspaceRoot, filepath.FromSlash(tenant))
}

// DenyList is the deny list every workspace read on a model's behalf is
// held to: workspace.deny after the built-in list, or alone with
// workspace.denyDefaults false. Validate has checked the patterns.
func (w Workspace) DenyList() (*workspace.DenyList, error) {
	return workspace.NewDenyList(w.Deny, w.DenyDefaults)
}

// LocalRoots are the directories a local run opens workspaces under:
// the current directory, extra (the run's --workspace, when set), and
// workspace.roots.
func (w Workspace) LocalRoots(cur, extra string) []string {
	return append([]string{cur, extra}, w.Roots...)
}
