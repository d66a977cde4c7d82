package config

import (
	"path/filepath"
	"strings"
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
