package wiring

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/hashicorp/go-hclog"
	"github.com/pith-dev/pith/config"
	"github.com/pith-dev/pith/core/workspace"
)

// Workspaces is how a command opens the workspace of the session named
// name, every read held to the configured deny list. A session in a
// shared store, or a file under sessions.root, may have been created by
// any client of a daemon, which chose its cwd, so it is confined as in
// the daemon (config.Server.WorkspaceRootFor). A session file of the
// user's own is read only when its workspace is the current directory or
// below it, or below workspaceDir (--workspace) or a workspace.roots
// directory: a session written elsewhere, or by pi started in the home
// directory, names any directory, and a model steered by its text would
// read it. A workspace outside them is not read, with one warning line.
func Workspaces(cfg *config.Config, storeURL, name, workspaceDir string, log hclog.Logger) (workspace.Opener, error) {
	deny, err := cfg.Workspace.DenyList()
	if err != nil {
		return nil, err
	}
	confined := func(root string) (workspace.Opener, error) {
		if workspaceDir != "" {
			return nil, errors.New("--workspace is for a session file of your own; this session's workspace is read only under server.workspaceRoot, as in the daemon")
		}
		return workspace.Within(root).Denying(deny), nil
	}
	if storeURL != "" {
		return confined(cfg.Server.WorkspaceRootFor(name))
	}
	if rel, ok := underRoot(cfg.Sessions.Root, name); ok {
		return confined(cfg.Server.WorkspaceRootFor(rel))
	}
	if workspaceDir != "" {
		abs, err := filepath.Abs(workspaceDir)
		if err != nil {
			return nil, fmt.Errorf("--workspace: %w", err)
		}
		if st, err := os.Stat(abs); err != nil || !st.IsDir() {
			return nil, fmt.Errorf("--workspace %s: not a directory", workspaceDir)
		}
		workspaceDir = abs
	}
	cur, err := os.Getwd()
	if err != nil {
		return nil, fmt.Errorf("the current directory: %w", err)
	}
	open := workspace.Under(cfg.Workspace.LocalRoots(cur, workspaceDir)...).Denying(deny)
	var warned sync.Once
	return func(cwd string, opts workspace.Options) (*workspace.Workspace, error) {
		ws, err := open(cwd, opts)
		// The engine asks once per use (the worker, rehydrate, the
		// plugins' event); the user is told once.
		if nc := (*workspace.NotChosenError)(nil); errors.As(err, &nc) {
			warned.Do(func() {
				log.Warn("the session's workspace is outside the current directory: none of its files is read (the explore worker's file tools are off, rehydrate reads nothing, plugins are told of no workspace); run from it, or pass --workspace DIR or list it in workspace.roots to read it", "workspace", nc.Cwd)
			})
		}
		return ws, err
	}, nil
}

// underRoot is path relative to root (slash-separated) when path names a
// file below root, by its absolute path with links resolved on both
// sides.
func underRoot(root, path string) (string, bool) {
	if root == "" {
		return "", false
	}
	real := func(p string) string {
		if abs, err := filepath.Abs(p); err == nil {
			p = abs
		}
		if r, err := filepath.EvalSymlinks(p); err == nil {
			p = r
		}
		return p
	}
	rel, err := filepath.Rel(real(root), real(path))
	if err != nil || rel == "." || !filepath.IsLocal(rel) {
		return "", false
	}
	return filepath.ToSlash(rel), true
}
